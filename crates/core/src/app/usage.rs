//! Usage: the tokens each model took in and gave out, per model and per day, for all
//! projects or one; with a cost where the price table (`usage.prices`) knows the model.

use serde::Serialize;

use super::{App, Result};
use crate::store::keys::USAGE_PRICES;
use crate::store::{DayTokens, ModelTokens, Price, Prices};

/// One model's totals and, when priced, their cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelUsage {
    #[serde(flatten)]
    pub tokens: ModelTokens,
    /// In the price table's currency; `None` when the table has no price for the model.
    pub cost: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    /// Most used first.
    pub models: Vec<ModelUsage>,
    /// The last [`USAGE_DAYS`] days, oldest first (days without use are absent).
    pub days: Vec<DayTokens>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The sum of the priced models' costs (`None`: none is priced).
    pub cost: Option<f64>,
}

/// How far back the per-day series goes.
pub const USAGE_DAYS: i64 = 30;

/// The price of `model` from `provider`: `provider/model` first, then the model's name.
pub fn price_of<'p>(prices: &'p Prices, provider: &str, model: &str) -> Option<&'p Price> {
    prices
        .get(&format!("{provider}/{model}"))
        .or_else(|| prices.get(model))
}

fn cost(price: &Price, tokens: &ModelTokens) -> f64 {
    (tokens.input_tokens as f64 * price.input_per_mtok
        + tokens.output_tokens as f64 * price.output_per_mtok)
        / 1_000_000.0
}

impl App {
    /// Tokens per model and per day, of project `project_id` or of all projects.
    pub fn usage(&self, project_id: Option<i64>) -> Result<UsageReport> {
        let store = self.store();
        let prices = self.prices()?;
        let models: Vec<ModelUsage> = store
            .usage_by_model(project_id)?
            .into_iter()
            .map(|tokens| ModelUsage {
                cost: price_of(&prices, &tokens.provider, &tokens.model).map(|p| cost(p, &tokens)),
                tokens,
            })
            .collect();
        let since = crate::store::now_ms() - USAGE_DAYS * 24 * 3600 * 1000;
        let priced: Vec<f64> = models.iter().filter_map(|m| m.cost).collect();
        Ok(UsageReport {
            input_tokens: models.iter().map(|m| m.tokens.input_tokens).sum(),
            output_tokens: models.iter().map(|m| m.tokens.output_tokens).sum(),
            cost: (!priced.is_empty()).then(|| priced.iter().sum()),
            days: store.usage_by_day(project_id, since)?,
            models,
        })
    }

    /// The price table (`usage.prices`).
    pub fn prices(&self) -> Result<Prices> {
        Ok(self
            .store()
            .setting::<Prices>(USAGE_PRICES)?
            .unwrap_or_default())
    }

    /// Sets (or with `None` removes) the price of a model (`model` or `provider/model`).
    pub fn set_price(&self, model: &str, price: Option<Price>) -> Result<Prices> {
        let model = model.trim();
        if model.is_empty() {
            return Err(super::AppError::Invalid(
                "a price needs a model name".into(),
            ));
        }
        if let Some(p) = price
            && !(p.input_per_mtok.is_finite()
                && p.output_per_mtok.is_finite()
                && p.input_per_mtok >= 0.0
                && p.output_per_mtok >= 0.0)
        {
            return Err(super::AppError::Invalid(
                "prices are numbers of at least 0 (per million tokens)".into(),
            ));
        }
        let mut prices = self.prices()?;
        match price {
            Some(price) => prices.insert(model.to_string(), price),
            None => prices.remove(model),
        };
        self.store().set_setting(USAGE_PRICES, &prices)?;
        Ok(prices)
    }
}
