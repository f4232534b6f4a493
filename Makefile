# SPDX-License-Identifier: Apache-2.0
# The front door: a thin wrapper over CMake/CTest, in the style Neovim uses.
#   make          release build in build/ (libacp, acp-agent, acp)
#   make test     deps + npm ci + ASan/UBSan build in build/asan + every test
#   make test-live the openai engine's suite against a real model server (ACP_LIVE_BASE_URL,
#                 ACP_LIVE_MODEL, optional ACP_LIVE_API_KEY; docs/openai-engine.md)
#   make demo     deps + build + a scripted tour of acp against acp-agent
#   make bench    release build + benchmarks beside the official TypeScript SDK
#   make fuzz     libFuzzer (clang) on the JSON-RPC reader for FUZZ_SECONDS (600)
#   make fuzz-all every untrusted-input parser under libFuzzer, FUZZ_SECONDS in all
#   make valgrind the unit tests under valgrind (no sanitizers)
#   make deb      the Debian packages libacp1, libacp-dev, acp-tools into build/deb/ (lintian-checked)
#   make abi-baseline  record libacp.so's ABI in abi/libacp.abi, on purpose (docs/abi.md)
#   make debug | asan | install | format | clean
CMAKE      ?= cmake
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local
FUZZ_SECONDS ?= 600

all: release

deps:
	@./scripts/deps.sh

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

npm: node_modules/.package-lock.json

build/CMakeCache.txt:
	$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX)

release: build/CMakeCache.txt
	$(CMAKE) --build build -j $(JOBS)

debug:
	$(CMAKE) -S . -B build/debug -DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build build/debug -j $(JOBS)

asan:
	$(CMAKE) -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DACP_ASAN=ON
	$(CMAKE) --build build/asan -j $(JOBS)

test: deps npm asan
	cd build/asan && ctest --output-on-failure -j $(JOBS) --timeout 600

# Opt-in, not in make test: tests/engine-openai against a real OpenAI-compatible server, through
# a recording proxy; the tests that need scripted replies skip themselves.
export ACP_LIVE_BASE_URL ACP_LIVE_MODEL ACP_LIVE_API_KEY
test-live: deps npm asan
	@test -n "$(ACP_LIVE_BASE_URL)" -a -n "$(ACP_LIVE_MODEL)" || { \
	    echo "make test-live: set ACP_LIVE_BASE_URL and ACP_LIVE_MODEL (e.g. http://127.0.0.1:11434/v1 and qwen3:4b); see docs/openai-engine.md" >&2; exit 2; }
	cd build/asan && ACP_TEST_TIMEOUT_MS=600000 ctest -L engine-openai --output-on-failure --timeout 3600

demo: deps npm release
	./scripts/demo.sh build

# The unit tests again under valgrind (a build without sanitizers): leaks, fd leaks, bad reads.
valgrind: deps
	$(CMAKE) -S . -B build/debug -DCMAKE_BUILD_TYPE=Debug
	$(CMAKE) --build build/debug -j $(JOBS)
	cd build/debug && ctest -j $(JOBS) -T memcheck -R '^(test_|rt_|fuzz_)' --output-on-failure

# The ABI that the abi_baseline test holds libacp to, taken from the ASan build's libacp.so (the
# test's own; any build with DWARF gives the same baseline).
abi-baseline:
	$(CMAKE) -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DACP_ASAN=ON
	$(CMAKE) --build build/asan -j $(JOBS) --target acp
	ACP_SOURCE=. sh tests/abi/abi.sh update build/asan/libacp.so build/asan/include

bench: deps npm release
	./bench/run.sh build

# Real agents from npm (opencode, codex-acp 0.16 and 2.6, gemini-cli, qwen-code, claude-agent-acp,
# copilot, pi-acp) under a raw JSON-RPC probe, under acp, and under acp check --no-prompt; reports
# in build/real-agents/ and tests/real-agents/check/. Not in make test: about 1 GB.
interop-real: deps npm release
	./tests/real-agents/run.sh
.PHONY: interop-real

fuzz-build: deps
	$(CMAKE) -S . -B build/fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACP_FUZZ=ON -DBUILD_TESTING=OFF
	$(CMAKE) --build build/fuzz -j $(JOBS) --target fuzz_all

fuzz: fuzz-build
	./fuzz/run.sh $(FUZZ_SECONDS) build/fuzz rpc_recv

fuzz-all: fuzz-build
	./fuzz/run.sh $(FUZZ_SECONDS) build/fuzz

install: release
	$(CMAKE) --install build

deb: deps
	JOBS=$(JOBS) ./scripts/deb.sh build/deb

format:
	find include rpc rt store net mcp agent client engines tools tests fuzz bench -name '*.[ch]' | xargs clang-format -i

clean:
	rm -rf build

.PHONY: all deps npm release debug asan valgrind abi-baseline test test-live demo bench fuzz fuzz-build fuzz-all install deb format clean
