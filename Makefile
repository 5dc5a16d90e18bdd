# The two commands of the quickstart:
#   make demo   local cluster + controller + Subscription to the bundled Redis operator
#   make test   every test: fmt, clippy, unit, fixture, CLI and cluster suites (starts and stops
#               the local control plane around them; see scripts/test)
SHELL := /bin/bash
.PHONY: demo test catalog cluster-up cluster-down

demo:
	scripts/demo

test:
	scripts/test

cluster-up:
	tests/cluster/build
	tests/cluster/up

cluster-down:
	tests/cluster/down

catalog:
	scripts/render-catalog
