"""Permission requests answered exactly once, rules, what a question or plan answer means."""
