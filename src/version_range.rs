//! version_range: placeholder, filled in by its owner.
