# Jadpo — `make help` lists the targets.
.DEFAULT_GOAL := help
CARGO ?= cargo

.PHONY: help run test lint fmt bench build prereqs

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  make %-8s %s\n", $$1, $$2}'

run: ## Run the sample app locally on SQLite (./.jadpo/main.db) at http://127.0.0.1:8080
	$(CARGO) run -p jadpo-local

prereqs: ## Install what the tests need when it is missing (PostgreSQL binaries, rustfmt, clippy)
	@scripts/test-prereqs.sh

test: prereqs lint ## Check format and clippy, then run every test (real PostgreSQL and SQLite)
	$(CARGO) test --workspace

lint: ## rustfmt check and clippy with warnings denied
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt: ## Format the code
	$(CARGO) fmt --all

bench: prereqs ## Run the benchmarks (PostgreSQL + SQLite) and write BENCHMARKS.md
	$(CARGO) bench -p jadpo-test-harness --bench seam
	$(CARGO) bench -p jadpo-runtime --bench pipeline
	$(CARGO) bench -p jadpo-runtime --bench workflow
	$(CARGO) bench -p jadpo-runtime --bench housekeeping
	@{ printf '# Benchmarks\n\nProduced by `make bench` on the development machine (2 cores); each section names its command.\nRatios compare runs made in the same process or script; absolute numbers are context only.\n\n'; \
	   cat target/bench/seam.md; echo; cat target/bench/pipeline.md; echo; cat target/bench/workflow.md; echo; cat target/bench/housekeeping.md; } > BENCHMARKS.md
	@echo "written to BENCHMARKS.md"

build: ## Build every binary in release mode (Lambda packaging lands with the deploy issue)
	$(CARGO) build --release --workspace --bins
	@ls -l target/release/jadpo target/release/jadpo-local | awk '{print $$5, $$9}'
