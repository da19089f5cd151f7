# Mill — make targets. `make` alone lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.SHELLFLAGS := -euo pipefail -c

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_TIMEOUT ?= 14m
FUZZTIME    ?= 30s
# Every target that talks to the local services runs with this environment.
WITH_ENV := source localstack/env.sh &&

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_\/-]+:.*## /{printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## the whole mill in one process (no AWS, no database, no Docker): seed, duplicate, inject faults, check, repair; CONSOLE=127.0.0.1:8080 also serves the Mill Console
	$(GO) run ./cmd/millctl dev $(if $(CONSOLE),--console $(CONSOLE)) $(DEMO_FLAGS)

.PHONY: local
local: up build ## the whole mill on the local emulator and PostgreSQL with the real binaries (setup, the demo, Workman, the producers, the console) until Ctrl-C
	./scripts/local.sh

.PHONY: up
up: ## start the AWS emulator (moto or LocalStack), PostgreSQL and the GCS and Azure Blob emulators, wait until they answer
	./localstack/up.sh

.PHONY: down
down: ## stop what `make up` started
	./localstack/down.sh

.PHONY: env
env: ## print the environment for the local services: eval "$(make -s env)" in a shell
	@./localstack/env.sh

.PHONY: build
build: ## build every binary into bin/
	$(GO) build -o bin/ ./cmd/...

.PHONY: test
test: up ## start the services if needed, then go vet and every test with -race (-count=1: the services are state the test cache cannot see); fails when the tests left a queue, bucket, table, alarm, stack or schema behind
	$(WITH_ENV) $(GO) vet ./...
	$(WITH_ENV) $(GO) run ./internal/testkit/testenv/leftovers $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: test/unit
test/unit: ## unit tests only (-short: integration tests are skipped), no services needed
	$(GO) test -short -race -timeout $(TEST_TIMEOUT) ./...

.PHONY: test/integration
test/integration: up ## every test, verbose, against the local services
	$(WITH_ENV) $(GO) run ./internal/testkit/testenv/leftovers $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -v ./... 2>&1 | tee .local/test.log | { grep -E '^(--- (PASS|FAIL|SKIP)|ok|FAIL|PASS)' || true; }

.PHONY: test/faults
test/faults: up ## fault tests with real processes: SQS outage, PostgreSQL restart, kill -9 (MILL_FAULTS_SCALE=0.2 for a quick run)
	$(WITH_ENV) $(GO) test -tags faults -race -count=1 -timeout 40m -v ./test/faults/...

.PHONY: test/localstack
test/localstack: up ## the AWS contract suites and the audit/duplication e2e test against LocalStack (host mode, port 4567, installed on first use); no test may skip
	./scripts/test-aws.sh localstack

.PHONY: test/aws
test/aws: up ## the same suites against a real AWS account: MILL_TEST_REAL_AWS=<account ID>, us-east-1 (docs/DEVELOPMENT.md: Testing against real AWS)
	./scripts/test-aws.sh real

.PHONY: localstack/up
localstack/up: ## start LocalStack in host mode on 127.0.0.1:4567 beside moto (installs it and DynamoDB Local on first use)
	./localstack/host.sh up

.PHONY: localstack/down
localstack/down: ## stop the LocalStack that localstack/up started
	./localstack/host.sh down

.PHONY: lint
lint: ## gofmt, go vet, the layers' import directions (test/layers), go mod tidy check, staticcheck, cfn-lint on infra/, govulncheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 ./test/layers
	$(GO) mod tidy -diff
	$(GO) run $(STATICCHECK) ./...
	./infra/lint.sh
	./scripts/govulncheck.sh

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 30s) each; a summary at the end
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

.PHONY: bench
bench: up ## run every benchmark against the local services, print one table and write it to docs/PERFORMANCE.md (MILL_BENCH_BIG_BYTES sizes the 1 GiB objects)
	./scripts/bench.sh

.PHONY: docs
docs: ## regenerate docs/CONFIGURATION.md (the configuration reference) from the binaries' --help
	$(GO) test ./test/docs -run TestConfigReference -count=1 -update

.PHONY: tidy
tidy: ## go mod tidy
	$(GO) mod tidy

.PHONY: clean
clean: ## remove build outputs
	rm -rf bin/
