//! tokio-nsq (from crates.io, unchanged) against the real binary: PUB, MPUB, DPUB, FIN, REQ
//! and TOUCH through its producer and consumer.

use nsqlab_tests::Nsqd;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_nsq::{
    NSQChannel, NSQConsumerConfig, NSQConsumerConfigSources, NSQEvent, NSQProducerConfig,
    NSQRequeueDelay, NSQTopic,
};

#[test]
fn tokio_nsq_publishes_and_consumes() {
    let d = Nsqd::start(&[]);
    let addr = d.tcp.to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let topic = NSQTopic::new("tokio_nsq").unwrap();
        let mut consumer = NSQConsumerConfig::new(topic.clone(), NSQChannel::new("c").unwrap())
            .set_max_in_flight(5)
            .set_sources(NSQConsumerConfigSources::Daemons(vec![addr.clone()]))
            .build();
        let mut producer = NSQProducerConfig::new(addr).build();
        assert!(matches!(
            producer.consume().await,
            Some(NSQEvent::Healthy())
        ));
        let mut expected = Vec::new();
        for i in 0..5 {
            let b = format!("pub-{i}");
            expected.push(b.clone());
            producer.publish(&topic, b.into_bytes()).await.unwrap();
            assert!(matches!(producer.consume().await, Some(NSQEvent::Ok())));
        }
        let batch: Vec<Vec<u8>> = (0..5).map(|i| format!("mpub-{i}").into_bytes()).collect();
        expected.extend((0..5).map(|i| format!("mpub-{i}")));
        producer.publish_multiple(&topic, batch).await.unwrap();
        assert!(matches!(producer.consume().await, Some(NSQEvent::Ok())));
        for b in ["req-me", "touch-me"] {
            expected.push(b.into());
            producer
                .publish(&topic, b.as_bytes().to_vec())
                .await
                .unwrap();
            assert!(matches!(producer.consume().await, Some(NSQEvent::Ok())));
        }
        // Due times are wall-clock times (see nsqd_storage.rs): checked against the wall clock.
        let dpub_at = std::time::SystemTime::now();
        expected.push("dpub-300".into());
        producer
            .publish_deferred(&topic, b"dpub-300".to_vec(), 300)
            .await
            .unwrap();
        assert!(matches!(producer.consume().await, Some(NSQEvent::Ok())));

        let mut seen: BTreeMap<String, Vec<u16>> = BTreeMap::new();
        let mut done = 0;
        while done < expected.len() {
            let m = tokio::time::timeout(Duration::from_secs(10), consumer.consume_filtered())
                .await
                .expect("a message within 10 s")
                .expect("consumer open");
            let body = String::from_utf8(m.body.clone()).unwrap();
            seen.entry(body.clone()).or_default().push(m.attempt);
            match body.as_str() {
                "req-me" if m.attempt == 1 => {
                    m.requeue(NSQRequeueDelay::CustomDelay(Duration::from_millis(50)))
                        .await
                }
                "touch-me" => {
                    m.touch().await;
                    m.finish().await;
                    done += 1;
                }
                "dpub-300" => {
                    let waited = dpub_at.elapsed().unwrap_or_default();
                    assert!(
                        waited >= Duration::from_millis(295),
                        "DPUB early: {waited:?}"
                    );
                    m.finish().await;
                    done += 1;
                }
                _ => {
                    m.finish().await;
                    done += 1;
                }
            }
        }
        assert_eq!(
            seen.get("req-me"),
            Some(&vec![1, 2]),
            "REQ redelivers with attempts + 1"
        );
        for b in &expected {
            assert!(seen.contains_key(b), "{b} missing");
        }
        for (b, attempts) in &seen {
            if b != "req-me" {
                assert_eq!(attempts, &vec![1], "{b} delivered once");
            }
        }
    });
}
