# Jadpo — `make help` lists the targets.
.DEFAULT_GOAL := help
CARGO ?= cargo

.PHONY: help run install test test-build test-run lint lint-infra fmt fuzz soak audit bench bench-peers build tools prereqs

# The deployment tools live in a project-local virtualenv; its bin comes first on PATH so that
# cargo-lambda finds its zig (`python3 -m ziglang`).
TOOLS := $(CURDIR)/.venv-tools/bin
ARCH ?= arm64
FUNCTIONS := commit outbox-relay delivery schedule-tick housekeeping

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  make %-11s %s\n", $$1, $$2}'

run: ## Run the sample app locally on SQLite (./.jadpo/main.db) at http://127.0.0.1:3000
	$(CARGO) run -p jadpo-local

install: ## Put `jadpo` (this app's operator command) on the PATH: cargo install into ~/.cargo/bin (PREFIX=DIR installs into DIR/bin)
	$(CARGO) install --locked --path shared/cli $(if $(PREFIX),--root $(PREFIX))

prereqs: ## Install what the tests need when missing (PostgreSQL binaries, Chromium and chromedriver, moto, rustfmt, clippy)
	@scripts/test-prereqs.sh

test: prereqs lint lint-infra test-run ## Check format, clippy and the SAM template, then run every test (real PostgreSQL and SQLite); docs/testing.md

test-build: ## Build every test binary (and the function binaries the end-to-end tests run), running none
	$(CARGO) test --workspace --no-run

test-run: test-build ## Run every test on one throwaway PostgreSQL (or DATABASE_URL's), with cargo-nextest when installed
	scripts/with-postgres.sh scripts/run-tests.sh all

lint: ## rustfmt check, clippy with warnings denied, the layering of core and engine and no module circle at any depth, cargo-deny (licenses, bans, sources; advisories where GitHub answers, saying so where not)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 scripts/check-layers.py --self-test
	python3 scripts/check-layers.py
	@$(CARGO) deny --version >/dev/null 2>&1 || { echo "cargo-deny is missing: run make prereqs" >&2; exit 1; }
	$(CARGO) deny check --hide-inclusion-graph licenses bans sources
	@CARGO=$(CARGO) scripts/audit.sh

audit: ## Known vulnerabilities in the dependency tree (cargo-deny advisories; fails when GitHub, which serves RustSec's database, cannot be reached)
	@CARGO=$(CARGO) scripts/audit.sh --required

tools: ## Install cargo-lambda, cfn-lint and the SAM CLI into ./.venv-tools when missing
	@scripts/tools-prereqs.sh

lint-infra: tools ## Lint and validate infra/template.yaml offline (cfn-lint, sam validate, its privilege/secret/load checks)
	$(TOOLS)/cfn-lint infra/template.yaml
	SAM_CLI_TELEMETRY=0 $(TOOLS)/sam validate --region us-east-1 --template-file infra/template.yaml
	$(TOOLS)/python infra/check-template.py infra/template.yaml

fuzz: prereqs ## Property-based fuzzing of every parser with more cases than `make test` (CASES=20000 by default)
	PROPTEST_CASES=$(or $(CASES),20000) $(CARGO) test --release -p jadpo-http --lib --test http -- fuzz:: arbitrary
	PROPTEST_CASES=$(or $(CASES),20000) $(CARGO) test --release -p jadpo-lambda --test lambda -- fuzz::
	PROPTEST_CASES=$(or $(CASES),20000) $(CARGO) test --release -p jadpo-core --lib arbitrary
	PROPTEST_CASES=$(or $(CASES),20000) $(CARGO) test --release -p jadpo-cli --bin jadpo arbitrary

soak: prereqs ## The long fault runs (about 5 min; docs/testing.md): every crash loop at full length (JADPO_SOAK=1), the real process's outages (ORDERS=2500) and crash points (CRASHES=200 per adapter)
	JADPO_SOAK_ORDERS=$(or $(ORDERS),2500) JADPO_CRASH_RUNS=$(or $(CRASHES),200) \
	  scripts/with-postgres.sh scripts/run-tests.sh soak

fmt: ## Format the code
	$(CARGO) fmt --all

bench: prereqs ## Run the benchmarks (PostgreSQL + SQLite, and the local process under wrk) and write BENCHMARKS.md
	@scripts/bench-prereqs.sh
	$(CARGO) bench -p jadpo-test-harness --bench seam
	$(CARGO) bench -p jadpo-runtime --bench pipeline
	$(CARGO) bench -p jadpo-runtime --bench steps
	$(CARGO) bench -p jadpo-runtime --bench workflow
	$(CARGO) bench -p jadpo-runtime --bench housekeeping
	$(CARGO) bench -p jadpo-http --bench auth
	$(CARGO) bench -p jadpo-console --bench pages
	$(CARGO) bench -p jadpo-e2e --bench cold_start
	python3 scripts/bench-local.py
	@{ printf '# Benchmarks\n\nProduced by `make bench` on the development machine (2 cores); each section names its command.\nRatios compare runs made in the same process or script; absolute numbers are context only.\n\n'; \
	   python3 scripts/bench-peers/run.py --chart-link; \
	   cat target/bench/seam.md; echo; cat target/bench/pipeline.md; echo; cat target/bench/steps.md; echo; cat target/bench/workflow.md; echo; cat target/bench/housekeeping.md; echo; cat target/bench/auth.md; echo; cat target/bench/console.md; echo; cat target/bench/coldstart.md; echo; cat target/bench/local.md; echo; \
	   echo '<!-- bench-peers:begin -->'; cat docs/benchmark-peers.md; echo '<!-- bench-peers:end -->'; echo; cat docs/benchmark-history.md; } > BENCHMARKS.md
	@echo "written to BENCHMARKS.md"

bench-peers: ## Run Jadpo beside Graphile Worker, DBOS, pg-boss and awa on one throwaway cluster (fsync on), drawing docs/benchmark-peers.svg; ARGS='--rounds N --seconds S --drain JOBS' (or '--report-only')
	python3 scripts/bench-peers/run.py $(ARGS)

build: tools ## Build every function as a Lambda bootstrap (ARCH=arm64, or ARCH=x86_64) and print sizes
	rustup target add $(if $(filter x86_64,$(ARCH)),x86_64,aarch64)-unknown-linux-gnu
	PATH="$(TOOLS):$$PATH" $(TOOLS)/cargo-lambda lambda build --release $(if $(filter x86_64,$(ARCH)),--x86-64,--arm64) \
	  $(foreach f,$(FUNCTIONS),-p jadpo-fn-$(f) --bin $(f))
	@for f in $(FUNCTIONS); do ls -l target/lambda/$$f/bootstrap | awk -v f=$$f '{printf "  %-14s %6.1f MB  %s\n", f, $$5/1048576, $$9}'; done
