//! Adapter from trace.dat (placeholder while the reader lands).
