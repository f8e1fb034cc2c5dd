//! NSQ's utilities: `nsq_tail`, `nsq_to_file`, `to_nsq` and `nsq_stat`, with their flags and
//! output (see each module), built on [`crate::client`].

pub mod stat;
pub mod tail;
pub mod to_file;
pub mod to_nsq;

/// Go's `log.Fatal` with the standard logger: `YYYY/MM/DD HH:MM:SS <msg>` on stderr, exit 1.
pub fn fatal(msg: impl std::fmt::Display) -> ! {
    eprintln!("{} {msg}", chrono::Local::now().format("%Y/%m/%d %H:%M:%S"));
    std::process::exit(1);
}

/// Go's `log.Printf` with the standard logger.
pub fn logf(msg: impl std::fmt::Display) {
    eprintln!("{} {msg}", chrono::Local::now().format("%Y/%m/%d %H:%M:%S"));
}

/// A tokio runtime for a tool.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// SIGINT or SIGTERM (and SIGHUP when `hup`), as one future.
pub async fn termination(hup: bool) -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    // Only when asked: a handler, once installed, replaces SIGHUP's default (to end the
    // process) for good, and NSQ's tail and to_nsq keep that default.
    let mut hangup = hup.then(|| signal(SignalKind::hangup()).expect("SIGHUP handler"));
    let hangup = async {
        match &mut hangup {
            Some(h) => h.recv().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
        _ = hangup => "SIGHUP",
    }
}

/// Install a logger for go-nsq-style client lines (stderr) at info.
pub fn init_log(prefix: &str) {
    let _ = crate::logging::init(prefix, "info");
}
