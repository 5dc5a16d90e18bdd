//! redis_operator: placeholder, filled in by its owner.
