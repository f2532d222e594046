//! What every command gets: the app, whether to print JSON, and a runtime for the async parts.

use std::sync::Arc;

use anyhow::{Context, Result};

use tandem_core::app::App;

pub struct Ctx {
    pub app: Arc<App>,
    pub json: bool,
}

impl Ctx {
    pub fn out(&self, value: serde_json::Value, text: String) {
        if self.json {
            super::output::json(&value);
        } else {
            super::output::print(&text);
        }
    }
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tandem_core::llm::init_tls();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}
