-- How a model's server counts a prompt against Tandem's estimate of it: the ratio its
-- reported prompt tokens showed (at least 1; NULL until a reply reported a count above the
-- estimate). Packing keeps that much of the window free, so the prompt fits as the server
-- counts it.
ALTER TABLE model_profiles ADD COLUMN token_ratio REAL CHECK (token_ratio IS NULL OR (token_ratio >= 1 AND token_ratio <= 4));
