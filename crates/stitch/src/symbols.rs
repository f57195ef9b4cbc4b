//! Symbolization (placeholder while the core lands).
