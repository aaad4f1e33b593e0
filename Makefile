# s3tables-replica-kit. `make help` lists the targets. Every target installs what it needs (make setup) first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY        := .venv/bin/python
KIT       := .venv/bin/s3tables-kit
CONFIG    ?= examples/seed.toml
OUTPUTS   ?= outputs.json
# Test workers: 5, also on 2 cores. Much of the suite's time waits on subprocesses (JVMs, Terraform, the emulator's
# simulated latency), so a fifth worker fills cores the others leave waiting (BENCHMARKS.md, "CI on a fresh clone");
# 4 workers took about 7 GB of memory at most.
TEST_WORKERS ?= 5
# jsii supports Node 22 and 24 (README); on Node 20 `scripts/setup.sh` says so once and make silences the banner.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export PYTHONDONTWRITEBYTECODE := 1

.venv/.stamp: pyproject.toml constraints.txt
	@bash scripts/setup.sh venv
node_modules/.stamp: package.json package-lock.json
	@bash scripts/setup.sh npm
.jars/.stamp: jars/pom.xml jars/pinned-jars.sha256
	@bash scripts/setup.sh jars

.PHONY: help setup test test-fast lint typecheck check provider validate e2e e2e-all e2e-adopt synth golden policies policies-check policy-check \
        demo drill-vault drill-detection summary proofs recover recover-emr backup outputs status harden audit explain discover adopt-gate bench clean wheel-check \
        live-verify live-verify-cleanup

help: ## List the targets: the on-call ones first
	@printf 'On call (exit codes pass through: 0 healthy, 1 unhealthy, 2 refused):\n'
	@awk 'BEGIN {FS = ":.*## On call: "} /^[a-zA-Z0-9_-]+:.*## On call: / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@printf '\nDeploy, review, practise and develop:\n'
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / && !/## On call: / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: .venv/.stamp node_modules/.stamp .jars/.stamp ## Install Python venv, npm packages and Iceberg jars (idempotent)

test: setup ## Run the test suite CI runs (all but `extended`): 5 workers, each test file on one worker (longest first)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=12 -m "not extended"

test-all: setup ## Run every test, the `extended` walkthroughs too (the failover drill, the catalog jar on the stand-in, the bench smoke)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=12

test-fast: setup ## Run the tests that need neither Spark nor the provider bindings
	$(PY) -m pytest -q -m "not spark and not synth"

lint: setup ## ruff check + format check
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: setup ## mypy
	$(PY) -m mypy s3tables_kit emulator harness bench  # the product through its package, as it imports itself

check: lint typecheck policies-check validate ## Everything a pull request must pass besides the tests

wheel-check: setup ## The kit as installed: build the wheel, install it with the base dependencies only, run s3tables-kit there
	bash scripts/wheel-check.sh

e2e: setup ## Terraform + the real provider apply every stack of the seed to the local AWS stand-in; plan after apply empty; tools on it
	$(PY) -m harness.e2e $(ARGS)

e2e-adopt: setup ## Two brownfield lakes (ARGS="--world lake|one"; both by default): two buckets written by pyiceberg with a reader's grant and table-level settings; one account in two Regions that already replicates, with a KMS bucket and a PutRows table. Each discovered, its proposal completed, adopted by the e2e's Terraform apply behind the adoption gate, then checked
	$(PY) -m harness.e2e.adopt_worlds $(ARGS)

e2e-all: setup ## make e2e for both examples, each failover topology over its normal one after the real promotion, the estate, the one-account nine-bucket lake, the provider's version-token probe, the detection drill, then make live-verify through Terraform
	$(PY) -m harness.e2e --all $(ARGS)
	$(PY) -m harness.e2e.token_probe --json .build/e2e/token-probe.json
	$(PY) -m harness.e2e.adopt_worlds
	$(PY) -m harness.drills.detection
	$(PY) -m harness.live_standin --yes --apply terraform

live-verify: ## Prove the kit's AWS assumptions on a sandbox: AWS=1 for real AWS (asks first; ARGS="--yes" for CI), else the local stand-in
	$(SETUP_FIRST)
	+@$(if $(AWS),$(PY) -m s3tables_kit.infra.live --aws,$(PY) -m harness.live_standin) $(ARGS)

live-verify-cleanup: setup ## Finish a live-verify run that did not clean up: RUN=<id> (AWS=1 on AWS); idempotent
	$(if $(AWS),$(PY) -m s3tables_kit.infra.live,$(PY) -m harness.live_standin) cleanup --run "$(RUN)" $(if $(AWS),--aws) $(ARGS)

provider: setup ## Optional, needs Go: build hashicorp/aws 6.x (the generation the stacks pin) limited to their services, into ~/.cache; validate/e2e prefer it
	$(PY) -m harness.provider_build $(ARGS)

validate: setup ## terraform init + validate of every stack of every example against the local provider binaries
	$(PY) -m s3tables_kit.infra.validate $(ARGS)

synth: setup ## Synthesise the stacks of CONFIG into cdktf.out/ (same as `npx cdktf synth`)
	KIT_CONFIG=$(CONFIG) $(PY) -m s3tables_kit.infra.main

golden: setup ## Re-record the golden synth snapshots in tests/golden/ (review the diff before committing!)
	$(PY) -m s3tables_kit.infra.golden --write

policies: setup ## Render every policy document of every example to policies/rendered/ (+ SUMMARY.md)
	$(PY) -m s3tables_kit.policies.render

policies-check: setup ## Fail when policies/rendered/ is stale (shows the diff)
	$(PY) -m s3tables_kit.policies.render --check

proofs: setup ## IAM proofs (matrix, mutations, multi-step attacks) with the report of cases resting on one layer
	$(KIT) proofs $(ARGS)

policy-check: setup ## Credentialed: IAM Access Analyzer checks of the rendered policies (skips without credentials)
	$(PY) -m s3tables_kit.policies.access_analyzer $(ARGS)

demo: setup ## Main job on the embedded local default: seed summary, then the walkthrough as a local recovery drill
	$(KIT) summary --config $(CONFIG) --resources
	$(PY) -m harness.drills.demo

drill-vault: setup ## Vault drill on the stand-in: back up, change, back up, the replica expires point 1, restore it from the vault
	$(PY) -m harness.drills.vault $(ARGS)

drill-detection: setup ## Detection drill on the sandbox: each way to blind or fool the alarms, which alarm or finding caught it after how many runs (exit 1: one missed)
	$(PY) -m harness.drills.detection $(ARGS)

summary: setup ## What `cdktf deploy` of CONFIG would create: stacks, resources, protective denies, outputs
	$(KIT) summary --config $(CONFIG) --resources

outputs: setup ## After `cdktf deploy`: write the outputs contract of CONFIG's stacks to $(OUTPUTS): make outputs CONFIG=kit.toml
	@if [ "$(origin CONFIG)" = "file" ]; then \
		echo "make outputs: name the deployed configuration: make outputs CONFIG=kit.toml (it reads that configuration's stacks)" >&2; exit 2; fi
	$(KIT) outputs --config $(CONFIG) --out $(OUTPUTS)

# The on-call targets pass their tool's exit code through: 0 healthy, 1 unhealthy, 2 refused. GNU make exits 2 when
# any recipe fails, except in question mode (-q), where a recipe line marked `+` still runs and its exit status 1
# comes back as make's own; setup runs in a sub-make outside question mode. Every recipe line of an on-call target is
# marked `+`: with one unmarked line make runs nothing and answers 1 (tests/test_cli.py checks each line).
ONCALL := status harden audit failover explain recover recover-emr live-verify
ifneq ($(filter $(ONCALL),$(MAKECMDGOALS)),)
MAKEFLAGS += -q
endif
SETUP_FIRST = +@env -u MAKEFLAGS -u MFLAGS $(MAKE) -s --no-print-directory setup

status: ## On call: replication status and lag: ARGS="--outputs outputs.json --max-lag 30m" (exit 1: unhealthy); the backfill: ARGS="... --backfill --watch 60"
	$(SETUP_FIRST)
	+@$(KIT) status $(ARGS)

harden: ## On call: table policies + replica retention on service-created replicas: ARGS="--outputs outputs.json --dry-run"
	$(SETUP_FIRST)
	+@$(KIT) harden $(ARGS)

audit: ## On call: compare live protections with the configuration: ARGS="--config kit.toml --outputs outputs.json"
	$(SETUP_FIRST)
	+@$(KIT) audit $(ARGS)

discover: setup ## Read an existing lake (read-only): a proposed kit.toml and a report: ARGS="--region eu-west-1 --replicate-to eu-central-1"
	$(KIT) discover $(ARGS)

adopt-gate: setup ## Before the first apply of an adopting stack: ARGS="--stack-dir cdktf.out/stacks/source --config kit.toml --apply" (--take-over: an existing replication taken over in one step) (exit 2: refused, nothing applied)
	$(KIT) adopt-gate $(ARGS)

explain: ## On call: why a request is allowed or denied: ARGS="--config kit.toml --principal ARN --action s3tables:X --resource ARN"
	$(SETUP_FIRST)
	+@$(KIT) explain $(ARGS)

recover: ## On call: recover from the replica on local Spark: ARGS="--outputs outputs.json --namespace analytics"
	$(SETUP_FIRST)
	+@$(KIT) recover $(ARGS)

backup: ## Back up replica tables into the vault (incremental, a point per snapshot): ARGS="--outputs outputs.json --namespace analytics"
	$(SETUP_FIRST)
	+@$(KIT) backup $(ARGS)

recover-emr: ## On call: submit the recovery job to the provisioned EMR Serverless application: ARGS="--outputs outputs.json ..."
	$(SETUP_FIRST)
	+@$(KIT) recover-emr $(ARGS)

.PHONY: failover failover-drill
failover: ## On call: fail over to a replica in place (plan by default): ARGS="--config kit.toml --outputs outputs.json --replica-bucket B [--confirm B]"
	$(SETUP_FIRST)
	+@$(KIT) failover $(ARGS)

failover-drill: setup ## Failover drill on the S3 Tables emulator (no AWS): plan, promote, point in time, Spark writes, RPO/RTO
	$(PY) -m harness.drills.failover $(ARGS)

.PHONY: docs-reference
docs-reference: setup ## Regenerate docs/reference/ (kit.toml and outputs.json tables) from the models' field descriptions
	$(PY) -m s3tables_kit.topology.reference --write

.PHONY: sandbox
sandbox: setup ## The on-call path on a laptop: the example deployed into the local stand-in, outputs.json, commands to try; Ctrl-C stops it (ARGS="--apply": by the e2e Terraform apply; ARGS="--brownfield [one]": a lake the kit never saw, to discover)
	$(PY) -m harness.sandbox $(ARGS)

.PHONY: rehearse rehearse-upload
rehearse: setup ## Recovery rehearsal on the local drill warehouses (demo-out/): prints the rehearsed RTO, drops what it made
	$(PY) -m harness.drills.rehearse $(ARGS)

rehearse-upload: setup ## After deploy, as the recovery deploy role or break-glass: upload the scheduled jobs' artifacts to the scripts bucket's scheduled/ (OUTPUTS=outputs.json)
	$(PY) -m s3tables_kit.jobs.rehearse --upload $(OUTPUTS)

bench: setup ## Benchmarks, every section (BENCH_SCALE=quick|small|full) -> BENCHMARKS.md + bench-out/results.json
	$(PY) -m bench.run

clean: ## Remove build output (keeps .venv, node_modules, .jars)
	rm -rf cdktf.out .build/validate .build/e2e demo-out failover-out vault-out bench-out reports .pytest_cache .mypy_cache .ruff_cache
