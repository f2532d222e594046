//! Colours and text sizes.

use egui::Color32;

use crate::model::state::{Prefs, Theme};

pub const ACCENT: Color32 = Color32::from_rgb(94, 129, 244);
pub const ERROR: Color32 = Color32::from_rgb(229, 83, 75);
pub const WARN: Color32 = Color32::from_rgb(222, 160, 60);
pub const OK: Color32 = Color32::from_rgb(64, 180, 100);
pub const MUTED: Color32 = Color32::from_gray(140);
/// Colours for series in charts (one per model), told apart in both themes.
pub const SERIES: [Color32; 6] = [
    ACCENT,
    Color32::from_rgb(64, 180, 100),
    Color32::from_rgb(222, 160, 60),
    Color32::from_rgb(190, 100, 200),
    Color32::from_rgb(60, 180, 190),
    Color32::from_rgb(229, 83, 75),
];

/// Applies the theme and font size from the preferences.
pub fn apply(ctx: &egui::Context, prefs: &Prefs) {
    let preference = match prefs.theme {
        Theme::Dark => egui::ThemePreference::Dark,
        Theme::Light => egui::ThemePreference::Light,
        Theme::System => egui::ThemePreference::System,
    };
    ctx.set_theme(preference);
    let size = prefs.font_size;
    ctx.all_styles_mut(|style| {
        use egui::{FontFamily, FontId, TextStyle};
        style.text_styles = [
            (
                TextStyle::Heading,
                FontId::new(size * 1.3, FontFamily::Proportional),
            ),
            (TextStyle::Body, FontId::new(size, FontFamily::Proportional)),
            (
                TextStyle::Monospace,
                FontId::new(size * 0.95, FontFamily::Monospace),
            ),
            (
                TextStyle::Button,
                FontId::new(size, FontFamily::Proportional),
            ),
            (
                TextStyle::Small,
                FontId::new(size * 0.8, FontFamily::Proportional),
            ),
        ]
        .into();
        style.spacing.item_spacing = egui::vec2(8.0, 5.0);
    });
}

/// A short label for a file's type, shown in the tree.
pub fn file_icon(path: &str) -> &'static str {
    let ext = path.rsplit('.').next().unwrap_or("");
    match ext {
        "rs" => "📄",
        "md" | "txt" => "📝",
        "toml" | "json" | "yaml" | "yml" | "lock" => "⚙",
        "png" | "jpg" | "jpeg" | "gif" | "svg" | "ico" => "🖼",
        "js" | "ts" | "tsx" | "jsx" | "py" | "go" | "c" | "h" | "cpp" | "java" | "rb" | "sh" => {
            "📄"
        }
        _ => "📄",
    }
}
