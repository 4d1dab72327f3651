//! The chart kit: axes that fit their data (log or linear, ticks and labels), a frame,
//! lines with markers and bars, as SVG text drawn with plotters. Text is left to the SVG
//! viewer's fonts, so no font is read here.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, TAU};
use std::fmt;
use std::ops::Range;

/// One line of a line chart: its name (in the legend) and its `(x, y)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// Why a chart was not drawn.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChartError {
    /// Nothing to draw: no series, or no point the axes can show (a log axis has no place
    /// for zero or below).
    NoData,
    /// plotters failed to draw.
    Draw(DrawingAreaErrorKind<std::io::Error>),
}

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChartError::NoData => f.write_str("no data to draw"),
            ChartError::Draw(e) => write!(f, "drawing the chart failed: {e}"),
        }
    }
}

impl std::error::Error for ChartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ChartError::NoData => None,
            ChartError::Draw(e) => Some(e),
        }
    }
}

impl From<DrawingAreaErrorKind<std::io::Error>> for ChartError {
    fn from(e: DrawingAreaErrorKind<std::io::Error>) -> Self {
        ChartError::Draw(e)
    }
}

/// Tableau 10 (matplotlib's `tab10`): ten colours most readers tell apart.
pub(super) const PALETTE: [u32; 10] = [
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22,
    0x17becf,
];
/// Circle, triangle, square, diamond, triangle down, cross.
pub(super) const MARKERS: usize = 6;
pub(super) const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
pub(super) const MINOR: RGBColor = RGBColor(0xf2, 0xf2, 0xf2);
/// Peers' bars: a grey that leaves uidgen's blue the one colour on the chart.
pub(super) const PEER_BAR: RGBColor = RGBColor(0xa8, 0xa8, 0xa8);

pub(super) fn rgb(c: u32) -> RGBColor {
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

/// Series `i`'s (colour, marker) indices. The colour changes every series; the marker too,
/// and shifts one further each round of ten colours, so neighbours differ in both and the
/// first 60 pairs are all distinct.
pub(super) fn style_of(i: usize) -> (usize, usize) {
    (i % PALETTE.len(), (i + i / PALETTE.len()) % MARKERS)
}

/// A marker's outline in pixels around its point, `r` its radius; filled polygons all, so
/// every shape is one element type.
pub(super) fn marker(shape: usize, r: f64) -> Vec<(i32, i32)> {
    let ngon = |n: usize, turn: f64| {
        let at = |a: f64| ((r * a.cos()).round() as i32, (r * a.sin()).round() as i32);
        (0..n)
            .map(|k| at(turn + TAU * k as f64 / n as f64))
            .collect()
    };
    // Pixel y grows downwards: -π/2 points up.
    match shape {
        0 => ngon(12, 0.0),
        1 => ngon(3, -FRAC_PI_2),
        2 => ngon(4, FRAC_PI_4),
        3 => ngon(4, 0.0),
        4 => ngon(3, FRAC_PI_2),
        _ => {
            // A plus: one arm's three corners, turned a quarter at a time.
            let (a, b) = ((r / 3.0).round() as i32, r.round() as i32);
            let arm = [(-a, -b), (a, -b), (a, -a)];
            let turn = |p: (i32, i32), q: usize| (0..q).fold(p, |(x, y), _| (-y, x));
            (0..4).flat_map(|q| arm.map(|p| turn(p, q))).collect()
        }
    }
}

/// `v` in the largest of `units` it reaches (else in `base`), in about three digits:
/// 1500000 → "1.5M".
pub(super) fn scaled(v: f64, units: &[(f64, &str)], base: &str) -> String {
    let (div, unit) = units
        .iter()
        .find(|(d, _)| v.abs() >= *d)
        .map_or((1.0, base), |&(d, u)| (d, u));
    let v = v / div;
    let decimals = [100.0, 10.0, 1.0]
        .iter()
        .take_while(|&&m| v.abs() < m)
        .count();
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    format!("{s}{unit}")
}

/// Counts: 1k, 1.5M, 100M.
pub(super) fn si(v: f64) -> String {
    scaled(v, &[(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")], "")
}

/// Nanoseconds: 100 ns, 1.5 µs, 2 ms.
pub(super) fn ns(v: f64) -> String {
    scaled(v, &[(1e9, " s"), (1e6, " ms"), (1e3, " µs")], " ns")
}

pub(super) const SI: &dyn Fn(f64) -> String = &si;
pub(super) const NS: &dyn Fn(f64) -> String = &ns;
pub(super) const NINES: &dyn Fn(f64) -> String = &nines_label;

/// "Nines" (n for a fraction 1 - 10⁻ⁿ) as a percentile: 2 → "99%", 3 → "99.9%".
pub(super) fn nines_label(n: f64) -> String {
    let decimals = (n.round() as usize).saturating_sub(2);
    format!("{:.decimals$}%", 100.0 * (1.0 - 10f64.powf(-n)))
}

/// An f64 axis with ticks of our choosing (none: plotters' own): plotters' log ticks label
/// 2..9 of every decade, and its `WithKeyPoints` over a linear f64 axis takes no label
/// formatter.
pub(super) struct Ticked<R> {
    inner: R,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match (self.bold.is_empty(), hint.weight().allow_light_points()) {
            (true, _) => self.inner.key_points(hint),
            (false, true) => self.light.clone(),
            (false, false) => self.bold.clone(),
        }
    }
    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// Where an axis puts its labelled ticks.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Ticks {
    /// Log: every decade (and 2, 5 of it when there is one decade); linear: plotters'.
    Auto,
    /// At each value when there are at most ten (thread counts), else `Auto`.
    AtValues,
    /// At each whole number (the nines of a latency axis).
    Whole,
}

/// One axis: its title, scale, tick labels, span, ticks (labelled) and minor grid lines.
pub(super) struct Axis<'a> {
    pub(super) label: &'a str,
    pub(super) log: bool,
    pub(super) fmt: &'a dyn Fn(f64) -> String,
    pub(super) span: Range<f64>,
    pub(super) ticks: Vec<f64>,
    pub(super) minor: Vec<f64>,
}

/// How to build an axis: title, log scale, ticks, tick labels.
pub(super) type Spec<'a> = (&'a str, bool, Ticks, &'a dyn Fn(f64) -> String);

impl<'a> Axis<'a> {
    /// An axis over `values` (which must suit the scale); `None` when there are none. A
    /// log axis spans whole decades, so each decade is labelled.
    pub(super) fn fit((label, log, kind, fmt): Spec<'a>, values: &[f64]) -> Option<Self> {
        let mut distinct = values.to_vec();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        let (&lo, &hi) = (distinct.first()?, distinct.last()?);
        let (span, ticks, minor) = if kind == Ticks::Whole {
            let (a, b) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
            (
                a..b,
                (a as i64..=b as i64).map(|k| k as f64).collect(),
                vec![],
            )
        } else if kind == Ticks::AtValues && distinct.len() <= 10 {
            // A little room either side, so end markers stay off the frame.
            let pad = ((hi - lo) * 0.05).max(0.5);
            let span = if log {
                lo / 1.25..hi * 1.25
            } else {
                lo - pad..hi + pad
            };
            (span, distinct, vec![])
        } else if log {
            let a = lo.log10().floor() as i32;
            let b = (hi.log10().ceil() as i32).max(a + 1);
            let times = |ks: &[f64]| -> Vec<f64> {
                let decades = (a..b).map(|e| 10f64.powi(e));
                decades
                    .flat_map(|d| ks.iter().map(move |k| d * k))
                    .collect()
            };
            // One decade alone would have two labels: add 2 and 5 of it.
            let mut ticks = times(if b - a == 1 { &[1.0, 2.0, 5.0] } else { &[1.0] });
            ticks.push(10f64.powi(b));
            let minor = times(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
            (10f64.powi(a)..10f64.powi(b), ticks, minor)
        } else {
            let pad = if hi > lo {
                (hi - lo) * 0.05
            } else {
                hi.abs().max(1.0)
            };
            (lo - pad..hi + pad, vec![], vec![])
        };
        Some(Axis {
            label,
            log,
            fmt,
            span,
            ticks,
            minor,
        })
    }

    fn coord<R: Ranged<ValueType = f64>>(&self, inner: R) -> Ticked<R> {
        let (bold, light) = (self.ticks.clone(), self.minor.clone());
        Ticked { inner, bold, light }
    }

    /// Pixels for the widest tick label and the axis title beside it.
    fn label_width(&self) -> u32 {
        let ends = [self.span.start, self.span.end];
        let shown = if self.ticks.is_empty() {
            &ends[..]
        } else {
            &self.ticks
        };
        let widest = shown.iter().map(|&t| (self.fmt)(t).chars().count()).max();
        36 + 7 * widest.unwrap_or(1) as u32
    }
}

/// What a chart draws in its frame.
pub(super) enum Body<'a> {
    Lines(&'a [Series]),
    /// `(name, value)`, drawn top to bottom at y = n-1 … 0.
    Bars(&'a [(String, f64)]),
}

/// Draws `body` on the two axes, in whichever pair of scales they have.
pub(super) fn draw(title: &str, x: &Axis, y: &Axis, body: Body) -> Result<String, ChartError> {
    let lin = |a: &Axis| a.coord(RangedCoordf64::from(a.span.clone()));
    let log = |a: &Axis| a.coord(LogCoord::from(a.span.clone().log_scale()));
    match (x.log, y.log) {
        (false, false) => frame(title, x, y, lin(x), lin(y), body),
        (false, true) => frame(title, x, y, lin(x), log(y), body),
        (true, false) => frame(title, x, y, log(x), lin(y), body),
        (true, true) => frame(title, x, y, log(x), log(y), body),
    }
}

/// One chart as an SVG document: title, axes, grid, `body`, and a legend for lines.
pub(super) fn frame<X, Y>(
    title: &str,
    xa: &Axis,
    ya: &Axis,
    x: X,
    y: Y,
    body: Body,
) -> Result<String, ChartError>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    // Lines get a legend column right of the frame, so it never covers a line.
    let (width, height, legend_w) = match body {
        Body::Lines(series) => {
            let longest = series.iter().map(|s| s.name.chars().count()).max();
            let height = (80 + 22 * series.len() as u32).max(480);
            (720, height, 60 + 8 * longest.unwrap_or(0) as u32)
        }
        Body::Bars(bars) => (760, 110 + 30 * bars.len() as u32, 0),
    };
    let mut out = String::new();
    {
        let size = (width + legend_w, height);
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE)?;
        let (area, legend) = root.split_horizontally(width);
        let mut chart = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(ya.label_width())
            .build_cartesian_2d(x, y)?;
        let (x_fmt, y_fmt) = (|v: &f64| (xa.fmt)(*v), |v: &f64| (ya.fmt)(*v));
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(xa.label)
            .y_desc(ya.label)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .bold_line_style(GRID)
            .light_line_style(MINOR);
        if matches!(body, Body::Bars(_)) {
            mesh.disable_y_mesh();
        }
        mesh.draw()?;
        let left = |size: f64| {
            ("sans-serif", size)
                .into_text_style(&root)
                .pos(Pos::new(HPos::Left, VPos::Center))
        };
        match body {
            Body::Lines(series) => {
                for (i, s) in series.iter().enumerate() {
                    let (colour, shape) = style_of(i);
                    let colour = rgb(PALETTE[colour]);
                    // uidgen's line thicker, and its markers larger so it does not hide them.
                    let thick = s.name.starts_with("uidgen");
                    let line = colour.stroke_width(if thick { 4 } else { 2 });
                    let r = if thick { 6.5 } else { 5.0 };
                    let dot = |(x, y): (i32, i32)| {
                        Polygon::new(
                            marker(shape, r)
                                .into_iter()
                                .map(|(dx, dy)| (x + dx, y + dy))
                                .collect::<Vec<_>>(),
                            colour.filled(),
                        )
                    };
                    chart.draw_series(LineSeries::new(s.points.iter().copied(), line))?;
                    chart
                        .draw_series(s.points.iter().map(|&p| EmptyElement::at(p) + dot((0, 0))))?;
                    let y = 50 + 22 * i as i32;
                    legend.draw(&PathElement::new(vec![(4, y), (36, y)], line))?;
                    legend.draw(&dot((20, y)))?;
                    legend.draw(&Text::new(s.name.as_str(), (44, y), left(14.0)))?;
                }
            }
            Body::Bars(bars) => {
                for (k, (name, v)) in bars.iter().enumerate() {
                    let at = (bars.len() - 1 - k) as f64;
                    let uidgen = name.starts_with("uidgen");
                    let fill = if uidgen { rgb(PALETTE[0]) } else { PEER_BAR }.filled();
                    let bar = [(xa.span.start, at - 0.35), (*v, at + 0.35)];
                    chart.draw_series([Rectangle::new(bar, fill)])?;
                    let value = Text::new(si(*v), (6, 0), left(13.0));
                    chart.draw_series([EmptyElement::at((*v, at)) + value])?;
                }
            }
        }
        root.present()?;
    }
    Ok(out)
}

/// A line chart: one line per series, each with its own colour and marker (no two of the
/// first 60 series share both, neighbours share neither), a legend right of the frame, and
/// series named `uidgen…` drawn thicker. Log axes span whole decades and leave out points
/// at zero or below; an x axis with at most ten distinct values (thread counts) has a tick
/// at each. Tick labels are counts as 1k, 1M. [`ChartError::NoData`] when no point is
/// left to draw.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_log: bool,
    y_log: bool,
) -> Result<String, ChartError> {
    let (x, y) = (
        (x_label, x_log, Ticks::AtValues, SI),
        (y_label, y_log, Ticks::Auto, SI),
    );
    lines_on(title, x, y, series)
}

/// [`lines`] with axes of any kind: points an axis cannot show are left out first.
pub(super) fn lines_on(
    title: &str,
    x: Spec,
    y: Spec,
    series: &[Series],
) -> Result<String, ChartError> {
    let fits = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    let shown = |&(a, b): &(f64, f64)| fits(a, x.1) && fits(b, y.1);
    let kept: Vec<Series> = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: s.points.iter().copied().filter(shown).collect(),
        })
        .collect();
    let (xs, ys): (Vec<f64>, Vec<f64>) = kept.iter().flat_map(|s| s.points.iter().copied()).unzip();
    let xa = Axis::fit(x, &xs).ok_or(ChartError::NoData)?;
    let ya = Axis::fit(y, &ys).ok_or(ChartError::NoData)?;
    draw(title, &xa, &ya, Body::Lines(&kept))
}
