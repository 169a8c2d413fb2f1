//! `--plot FILE.png`: throughput and p99 latency per second, drawn with plotters' bitmap
//! backend. Text needs a TrueType font; plotters is built without system font lookup
//! (no fontconfig), so the font is read from the usual locations of a few common families.

use crate::stats::Second;
use anyhow::{anyhow, bail, Result};
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

const FONT_FILES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Registers the first font found as plotters' "sans-serif", once per process.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    let outcome = REGISTERED.get_or_init(|| {
        for path in FONT_FILES {
            let Ok(bytes) = std::fs::read(path) else { continue };
            // plotters keeps the font for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Ok(());
            }
        }
        Err(format!(
            "--plot needs a TrueType font and found none of {} (install fonts-dejavu-core)",
            FONT_FILES.join(", ")
        ))
    });
    outcome.clone().map_err(|e| anyhow!(e))
}

/// Draws the series into a PNG at `path`.
pub fn plot(series: &[Second], title: &str, path: &Path) -> Result<()> {
    if series.is_empty() {
        bail!("nothing to plot: the run measured no full second");
    }
    register_font()?;
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = BitMapBackend::new(path, (1000, 700)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let (top, bottom) = root.split_vertically(330);
        let end = series.last().map_or(1.0, |s| s.elapsed_s).max(1.0);
        let max_tps = series.iter().map(|s| s.tx_per_s).fold(0.0, f64::max).max(1.0) * 1.1;
        let max_p99 = series.iter().map(|s| s.p99_ms).fold(0.0, f64::max).max(0.1) * 1.1;

        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .caption("throughput", ("sans-serif", 16))
            .build_cartesian_2d(0.0..end, 0.0..max_tps)?;
        chart.configure_mesh().x_desc("seconds").y_desc("tx/s").label_style(("sans-serif", 13)).draw()?;
        chart.draw_series(LineSeries::new(series.iter().map(|s| (s.elapsed_s, s.tx_per_s)), BLUE.stroke_width(2)))?;

        let mut chart = ChartBuilder::on(&bottom)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .caption("latency", ("sans-serif", 16))
            .build_cartesian_2d(0.0..end, 0.0..max_p99)?;
        chart.configure_mesh().x_desc("seconds").y_desc("ms").label_style(("sans-serif", 13)).draw()?;
        chart
            .draw_series(LineSeries::new(series.iter().map(|s| (s.elapsed_s, s.p99_ms)), RED.stroke_width(2)))?
            .label("p99")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(series.iter().map(|s| (s.elapsed_s, s.p50_ms)), GREEN.stroke_width(2)))?
            .label("p50")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREEN.stroke_width(2)));
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("cannot draw {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: f64, tps: f64) -> Second {
        Second { elapsed_s: t, tx_per_s: tps, p50_ms: 2.0, p99_ms: 9.0 + t, retries: 0, errors: 0 }
    }

    /// A PNG where a font is installed; otherwise the message that says which font to install.
    #[test]
    fn draws_a_png_or_names_the_missing_font() {
        let path = std::env::temp_dir().join(format!("pistou-workload-plot-{}.png", std::process::id()));
        let series: Vec<Second> = (1..=5).map(|t| second(f64::from(t), 100.0 + f64::from(t))).collect();
        match plot(&series, "test", &path) {
            Ok(()) => {
                let bytes = std::fs::read(&path).expect("png written");
                let _ = std::fs::remove_file(&path);
                assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
            }
            Err(e) => assert!(e.to_string().contains("needs a TrueType font"), "{e:#}"),
        }
        let err = plot(&[], "empty", &path).expect_err("nothing to plot");
        assert!(err.to_string().contains("nothing to plot"), "{err:#}");
    }
}
