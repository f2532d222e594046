//! A small preview of an image's bytes (PNG), decoded once and kept as a texture in egui's
//! memory under a fingerprint of its content; other formats (or bytes that do not decode) show no preview.

use egui::{ColorImage, Id, TextureHandle, TextureOptions};

/// Shows `bytes` as an image at most `max` points on its longer side; `None` when it cannot
/// be shown (not a PNG, or not decodable), so the caller shows a label instead.
pub fn show(ui: &mut egui::Ui, bytes: &[u8], max: f32) -> Option<egui::Response> {
    let texture = texture(ui.ctx(), bytes)?;
    let size = texture.size_vec2();
    let scale = (max / size.x.max(size.y)).min(1.0);
    Some(ui.add(egui::Image::new((texture.id(), size * scale))))
}

fn texture(ctx: &egui::Context, bytes: &[u8]) -> Option<TextureHandle> {
    let key = Id::unique(("tandem-thumbnail", fingerprint(bytes)));
    if let Some(cached) = ctx.data(|d| d.get_temp::<Option<TextureHandle>>(key)) {
        return cached;
    }
    let decoded = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .ok()
        .map(|image| {
            let image = image.thumbnail(256, 256).to_rgba8();
            let size = [image.width() as usize, image.height() as usize];
            let pixels = ColorImage::from_rgba_unmultiplied(size, image.as_raw());
            ctx.load_texture("attachment", pixels, TextureOptions::LINEAR)
        });
    ctx.data_mut(|d| d.insert_temp(key, decoded.clone()));
    decoded
}

/// A cheap stand-in for the content, computed every frame: the length and 4 KiB sampled from
/// the start, middle and end (hashing a 10 MiB image per frame would not be cheap).
fn fingerprint(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.len().hash(&mut hasher);
    let sample = |at: usize| &bytes[at.min(bytes.len())..(at + 1365).min(bytes.len())];
    sample(0).hash(&mut hasher);
    sample(bytes.len() / 2).hash(&mut hasher);
    sample(bytes.len().saturating_sub(1365)).hash(&mut hasher);
    hasher.finish()
}
