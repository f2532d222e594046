//! What a proposal carries besides file diffs: dependencies, SQL, failed operations and
//! the model's findings.

use egui::{CornerRadius, Frame, Label, Margin, RichText, Ui};

use crate::command::Command;
use crate::model::review::Review;
use crate::widgets::diff_view::DiffStyle;
use tandem_core::edits::OpKind;

use super::{badge, section, wrapped};

/// Everything after the files: dependencies, SQL, security findings, problem reports and
/// the operations that failed.
pub(super) fn extras(ui: &mut Ui, review: &Review, style: &DiffStyle, commands: &mut Vec<Command>) {
    let (plan, visuals) = (&review.plan, ui.visuals().clone());
    if !plan.dependencies.is_empty() {
        section(ui, "Dependencies");
        let mut install = review.dependencies;
        if ui
            .checkbox(&mut install, "Install these packages")
            .changed()
        {
            commands.push(Command::ToggleDependencies);
        }
        ui.horizontal_wrapped(|ui| {
            for package in &plan.dependencies {
                badge(ui, package, style.colors.strong);
            }
        });
    }
    if !plan.sql.is_empty() {
        section(ui, "SQL statements");
        for statement in &plan.sql {
            if let Some(description) = &statement.description {
                ui.label(description);
            }
            Frame::new()
                .fill(visuals.code_bg_color)
                .corner_radius(CornerRadius::same(4))
                .inner_margin(Margin::same(6))
                .show(ui, |ui| {
                    let code = RichText::new(&statement.sql).monospace();
                    ui.add(Label::new(code).selectable(true).extend());
                });
            ui.weak("Not executed: run it yourself if you want it.");
        }
    }
    if !plan.security_findings.is_empty() {
        section(ui, "Security findings");
        for finding in &plan.security_findings {
            let color = match finding.level.to_ascii_lowercase().as_str() {
                "critical" | "high" => visuals.error_fg_color,
                "medium" | "moderate" => visuals.warn_fg_color,
                _ => style.colors.hunk_fg,
            };
            ui.horizontal(|ui| {
                badge(ui, &finding.level, color);
                ui.strong(&finding.title);
            });
            wrapped(ui, &finding.body, visuals.text_color());
        }
    }
    if !plan.problem_reports.is_empty() {
        section(ui, "Problem reports");
        for report in &plan.problem_reports {
            wrapped(ui, report, visuals.warn_fg_color);
        }
    }
    let mut failed = plan.errors().peekable();
    if failed.peek().is_some() {
        section(ui, "Failed operations");
    }
    for op in failed {
        let what = match op.op {
            OpKind::Write => "write",
            OpKind::Rename => "rename",
            OpKind::Delete => "delete",
            OpKind::SearchReplace => "search-replace",
            OpKind::AddDependency => "add dependency",
        };
        let to = op
            .to
            .as_deref()
            .map(|to| format!(" ➡ {to}"))
            .unwrap_or_default();
        let message = op.error.as_deref().unwrap_or("failed");
        wrapped(
            ui,
            format!("{what} {}{to}: {message}", op.path),
            visuals.error_fg_color,
        );
    }
}
