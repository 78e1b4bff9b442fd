# Supplyplan: `make run` starts the service on embedded defaults; `make test` runs every test.
GO       ?= go
BIN      := bin/supplyplan
DATA     ?= ./data
# ARGS are extra flags of `serve` under `make run`, e.g. ARGS='--api-addr 127.0.0.1:9080'.
ARGS     ?=
PKGS     := ./...

.PHONY: all build run test test-unit deps vet fuzz bench bench-mcp clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/supplyplan

run: build
	./$(BIN) serve --data $(DATA) $(ARGS)

vet:
	$(GO) vet $(PKGS)

# deps installs and starts what the integration tests need (real ClickHouse and Redis on private
# ports); see scripts/. It is a no-op when they already run. `bash scripts/clickhouse.sh stop`
# stops the test ClickHouse.
deps:
	@bash scripts/test-deps.sh

# bin/test-deps.env (written by deps) carries the servers' addresses into go test.
test: deps vet
	@set -a; [ ! -f bin/test-deps.env ] || . ./bin/test-deps.env; set +a; \
	echo "$(GO) test -race -count=1 -timeout 20m $(PKGS)"; \
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

test-unit:
	$(GO) test -race -count=1 -short $(PKGS)

fuzz:
	$(GO) test ./http -run '^$$' -fuzz FuzzDecodeScenario -fuzztime 30s
	$(GO) test ./http -run '^$$' -fuzz FuzzDecodeEvent -fuzztime 30s
	$(GO) test ./internal/strictjson -run '^$$' -fuzz FuzzCheck -fuzztime 30s
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz FuzzScan -fuzztime 30s
	$(GO) test ./internal/importjson -run '^$$' -fuzz FuzzDecodeOrderFast -fuzztime 30s
	$(GO) test ./internal/importjson -run '^$$' -fuzz FuzzDecodeDemandFast -fuzztime 30s
	$(GO) test ./rpc -run '^$$' -fuzz FuzzHandleMCP -fuzztime 30s
	$(GO) test ./http -run '^$$' -fuzz FuzzDecodeTransition -fuzztime 30s
	$(GO) test . -run '^$$' -fuzz FuzzDecodePlainJSON -fuzztime 30s
	$(GO) test ./jwtauth -run '^$$' -fuzz FuzzEd25519Verify -fuzztime 30s

# The memory section loads the full tenant (10,000 products x 500 locations) with 26 weeks of
# history so that make bench stays under 30 minutes; it measures the cost per week and projects
# 104 weeks. `go run ./bench/cmd/benchrun -only memory -memory-weeks 104` measures the full history
# (its import alone took 15 to 20 minutes on two quiet cores).
bench: build
	$(GO) run ./bench/cmd/benchrun -memory-weeks 26 -out bench/RESULTS.md

# bench-mcp measures the MCP registry and tool service next to a bare fasthttp handler (docs/mcp.md).
bench-mcp:
	$(GO) run ./bench/cmd/mcpbench -duration 5s -concurrency 32

clean:
	rm -rf bin
