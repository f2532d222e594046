//! Usage: tokens per day per model over the last 30 days (a stacked bar chart, `egui_plot`),
//! the totals per model with their cost, for the open project or all; and the price table
//! (in Settings) that costs are computed from.

use egui_plot::{Bar, BarChart, Legend, Plot};

use crate::command::Command;
use crate::model::state::AppState;
use crate::widgets::theme;
use tandem_core::app::{Price, USAGE_DAYS, UsageReport};

pub fn show(ui: &mut egui::Ui, state: &AppState, commands: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        if ui
            .selectable_label(!state.usage_all, "This project")
            .clicked()
        {
            commands.push(Command::LoadUsage(false));
        }
        if ui
            .selectable_label(state.usage_all, "All projects")
            .clicked()
        {
            commands.push(Command::LoadUsage(true));
        }
        if ui.small_button("Refresh").clicked() {
            commands.push(Command::LoadUsage(state.usage_all));
        }
    });
    let Some(report) = &state.usage else {
        ui.weak("Loading…");
        return;
    };
    if report.models.is_empty() {
        ui.weak("No replies recorded yet: tokens show here once a model has answered.");
        return;
    }
    ui.columns(2, |columns| {
        chart(&mut columns[0], report);
        totals(&mut columns[1], report);
    });
}

/// Tokens (in + out) per day, a bar per day stacked by model; x is days before today (UTC),
/// so the chart reads the same whatever the date.
fn chart(ui: &mut egui::Ui, report: &UsageReport) {
    let today = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| (d.as_secs() / 86_400) as i64);
    let x_of = |day: &str| -> Option<f64> {
        let mut parts = day.split('-').map(|p| p.parse::<i64>().ok());
        let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
        Some((days_from_civil(y, m, d) - today) as f64)
    };
    let mut charts: Vec<BarChart> = Vec::new();
    for (i, m) in report.models.iter().enumerate() {
        let (provider, model) = (&m.tokens.provider, &m.tokens.model);
        let bars: Vec<Bar> = report
            .days
            .iter()
            .filter(|d| &d.tokens.provider == provider && &d.tokens.model == model)
            .filter_map(|d| {
                let total = (d.tokens.input_tokens + d.tokens.output_tokens) as f64;
                Some(Bar::new(x_of(&d.day)?, total).width(0.7).name(&d.day))
            })
            .collect();
        let color = theme::SERIES[i % theme::SERIES.len()];
        let below: Vec<&BarChart> = charts.iter().collect();
        let chart = BarChart::new(format!("{provider} · {model}"), bars)
            .color(color)
            .stack_on(&below);
        charts.push(chart);
    }
    Plot::new("usage per day")
        .legend(Legend::default())
        .height(ui.available_height().max(120.0))
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .include_x(-(USAGE_DAYS as f64) + 0.5)
        .include_x(0.5)
        .include_y(0.0)
        .y_axis_label("tokens")
        .x_axis_formatter(|mark, _| {
            let day = mark.value.round();
            match day as i64 {
                _ if (mark.value - day).abs() > 1e-6 => String::new(),
                0 => "today".to_string(),
                n if n < 0 => format!("{} d ago", -n),
                _ => String::new(),
            }
        })
        .show(ui, |plot| {
            for chart in charts {
                plot.bar_chart(chart);
            }
        })
        .response
        .widget_info(|| {
            egui::WidgetInfo::labeled(egui::Role::Figure, true, "tokens per day by model")
        });
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn totals(ui: &mut egui::Ui, report: &UsageReport) {
    egui::ScrollArea::vertical()
        .id_salt("usage totals")
        .show(ui, |ui| {
            egui::Grid::new("usage per model")
                .striped(true)
                .num_columns(5)
                .show(ui, |ui| {
                    for head in ["model", "in", "out", "replies", "cost"] {
                        ui.strong(head);
                    }
                    ui.end_row();
                    for m in &report.models {
                        let t = &m.tokens;
                        ui.label(format!("{} · {}", t.provider, t.model));
                        ui.monospace(t.input_tokens.to_string());
                        ui.monospace(t.output_tokens.to_string());
                        ui.monospace(t.replies.to_string());
                        match m.cost {
                            Some(cost) => ui.monospace(format!("{cost:.4}")),
                            None => ui.weak("no price"),
                        };
                        ui.end_row();
                    }
                    ui.strong("total");
                    ui.monospace(report.input_tokens.to_string());
                    ui.monospace(report.output_tokens.to_string());
                    ui.label("");
                    match report.cost {
                        Some(cost) => ui.monospace(format!("{cost:.4}")),
                        None => ui.weak("—"),
                    };
                    ui.end_row();
                });
            ui.weak("Costs use the price table in Settings (per million tokens).");
        });
}

/// The price table in Settings: a row per priced model, and one to add.
pub fn prices(ui: &mut egui::Ui, state: &mut AppState, commands: &mut Vec<Command>) {
    ui.heading("Usage prices");
    ui.weak("Per million tokens, by model name or provider/model; local models cost nothing.");
    egui::Grid::new("prices").num_columns(4).show(ui, |ui| {
        for (model, price) in &state.prices {
            ui.monospace(model);
            ui.label(format!("in {}", price.input_per_mtok));
            ui.label(format!("out {}", price.output_per_mtok));
            if ui.small_button("Remove").clicked() {
                commands.push(Command::SetPrice(model.clone(), None));
            }
            ui.end_row();
        }
    });
    let form = &mut state.settings;
    let parse = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    let price = match (parse(&form.price_input), parse(&form.price_output)) {
        (Some(input_per_mtok), Some(output_per_mtok)) if !form.price_model.trim().is_empty() => {
            Some(Price {
                input_per_mtok,
                output_per_mtok,
            })
        }
        _ => None,
    };
    ui.horizontal(|ui| {
        for (label, text, width) in [
            ("Price of", &mut form.price_model, 160.0),
            ("input", &mut form.price_input, 60.0),
            ("output", &mut form.price_output, 60.0),
        ] {
            let label = ui.label(label);
            ui.add(egui::TextEdit::singleline(text).desired_width(width))
                .labelled_by(label.id);
        }
        ui.weak("per 1M tokens");
        let set = ui
            .add_enabled(price.is_some(), egui::Button::new("Set price"))
            .on_disabled_hover_text("A model name and two numbers of at least 0");
        if set.clicked() {
            commands.push(Command::SetPrice(
                form.price_model.trim().to_string(),
                price,
            ));
        }
    });
}
