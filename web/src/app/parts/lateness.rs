//! The lateness chart: how late each deferred message was delivered.

use super::*;

/// One lab's lateness figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub title: String,
    /// Bars in the order messages came due: a message's token and how late it was (ns), or,
    /// past [`BARS`] messages, the latest of each run of them.
    pub points: Vec<(Token, Time)>,
    /// Messages the bars stand for, how late they were at most and on average (ns).
    pub count: usize,
    pub max: Time,
    pub mean: f64,
}

/// Bars drawn per chart at most.
pub const BARS: usize = 120;

impl Series {
    /// Bars for every (token, lateness) in order, at most [`BARS`] of them.
    pub fn new(title: String, all: Vec<(Token, Time)>) -> Series {
        let count = all.len();
        let max = all.iter().map(|x| x.1).max().unwrap_or(0);
        let mean = all.iter().map(|x| x.1 as f64).sum::<f64>() / count.max(1) as f64;
        let per = count.div_ceil(BARS).max(1);
        let points = all
            .chunks(per)
            .filter_map(|run| run.iter().max_by_key(|x| x.1).cloned())
            .collect();
        Series {
            title,
            points,
            count,
            max,
            mean,
        }
    }
}

#[derive(Properties, PartialEq)]
pub struct ChartProps {
    pub series: Vec<Series>,
    pub lang: Lang,
}

/// A round top for an axis: 10, 20, 50, 100, 200, 500… ms.
fn nice_ms(max_ms: f64) -> f64 {
    let mut step = 10.0;
    loop {
        for m in [1.0, 2.0, 5.0] {
            if step * m >= max_ms {
                return step * m;
            }
        }
        step *= 10.0;
    }
}

/// How late each deferred message was delivered, per lab, with axes in milliseconds.
#[function_component(LatenessChart)]
pub fn lateness_chart(p: &ChartProps) -> Html {
    let max = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|x| x.1))
        .max()
        .unwrap_or(0);
    let top = nice_ms(max as f64 / MILLISECOND as f64);
    let (w, h, left, bottom) = (460.0, 160.0, 52.0, 34.0);
    let plot_h = h - bottom - 10.0;
    let y = |ms: f64| 10.0 + plot_h * (1.0 - ms / top);
    html! {
      <section class="lateness" data-testid="lateness">
        <h3>{t(p.lang, "ui.chart.title")}</h3>
        <div class="charts">
        { for p.series.iter().map(|s| {
            let n = s.points.len().max(1);
            let bw = ((w - left - 8.0) / n as f64).min(24.0);
            let ms = |t: f64| t / MILLISECOND as f64;
            let summary = if s.count == 0 {
                t(p.lang, "ui.chart.none").to_string()
            } else {
                let mut x = Text::new("ui.chart.summary")
                    .arg("n", s.count)
                    .arg("max", format!("{:.0}", ms(s.max as f64)))
                    .arg("mean", format!("{:.1}", ms(s.mean)))
                    .render(p.lang);
                if s.count > s.points.len() {
                    x.push_str(&Text::new("ui.chart.binned").arg("k", s.count.div_ceil(BARS)).render(p.lang));
                }
                x
            };
            html!{
            <figure class="series">
              <figcaption><b>{s.title.clone()}</b><span class="summary" data-testid="lateness-summary">{summary}</span></figcaption>
              <svg viewBox={format!("0 0 {w} {h}")} class="bars" role="img" aria-label={Text::new("ui.chart.aria").arg("title", &s.title).render(p.lang)}>
                <line class="axis" x1={left.to_string()} y1="10" x2={left.to_string()} y2={(h - bottom).to_string()}/>
                <line class="axis" x1={left.to_string()} y1={(h - bottom).to_string()} x2={(w - 4.0).to_string()} y2={(h - bottom).to_string()}/>
                { for [0.0, top / 2.0, top].iter().map(|&v| html!{ <>
                    <line class="tick" x1={(left - 4.0).to_string()} x2={(w - 4.0).to_string()} y1={y(v).to_string()} y2={y(v).to_string()}/>
                    <text class="ylab" x={(left - 6.0).to_string()} y={(y(v) + 4.0).to_string()}>{format!("{v:.0} ms")}</text>
                </> }) }
                <text class="xlab" x={((w + left) / 2.0).to_string()} y={(h - 6.0).to_string()}>{t(p.lang, "ui.chart.x")}</text>
                { for s.points.iter().enumerate().map(|(i, (tok, late))| {
                    let ms = *late as f64 / MILLISECOND as f64;
                    let bh = (plot_h * ms / top).max(1.5);
                    html!{ <rect x={(left + 2.0 + i as f64 * bw).to_string()} y={(h - bottom - bh).to_string()} width={(bw * 0.8).max(1.0).to_string()} height={bh.to_string()}
                                 data-late-ms={format!("{ms:.0}")} style={format!("--h: {}", tok.hue)}>
                      <title>{Text::new("ui.chart.bar").arg("label", &tok.label).arg("ms", format!("{ms:.0}")).render(p.lang)}</title></rect> }
                }) }
              </svg>
            </figure> }
        }) }
        </div>
      </section>
    }
}
