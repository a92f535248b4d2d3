# pocketmq: `make run` starts it, `make test` proves it, `make bench` measures it.
PYTHON ?= python3
# Byte-code caches are written here even where the environment turns them off (PYTHONDONTWRITEBYTECODE): the suite
# starts many interpreters (servers, CLIs, Spark's Python workers), and each compiled pocketmq and its test helpers
# anew, as each xdist worker re-ran pytest's assertion rewriting of every test module.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all run demo test test-needs bench lint typecheck clean java spark-demo native-clients browser apache-rocketmq go-client go5-client rust5-client test-rust5 spring-client java-clients java-sdk store-handover fuzz-apache

SPARK_STAMP := $(VENV)/.installed-spark

# The C accelerators (pocketmq/common/_speedups.c, pocketmq/remoting/_speedups.c and pocketmq/storage/_speedups.c,
# built by setup.py; pocketmq/common/accelerator.py says when they are used), compiled in place, again whenever a
# source changes: `make` alone builds the virtualenv and them.
EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
SPEEDUPS_SRC := pocketmq/common/_speedups.c pocketmq/remoting/_speedups.c pocketmq/storage/_speedups.c
SPEEDUPS_SO := $(SPEEDUPS_SRC:.c=$(EXT_SUFFIX))

all: $(STAMP) $(SPEEDUPS_SO)

# `make test` builds what it needs in parallel (test-needs): apt-get and Maven each take a lock, so two targets
# never run apt-get (dpkg's lock) or Maven (one local repository, ~/.m2, that Maven 3.8 does not lock) at once.
apt_install = flock /tmp/pocketmq-apt.lock sh -c 'apt-get update -qq && apt-get install -y -qq $(1) >/dev/null'
MVN := flock /tmp/pocketmq-maven.lock mvn
# A Maven build's folder comes from ~/.cache/pocketmq/builds when one was made from the same inputs (tests/build_cache.sh);
# each build's *_CACHE variable names its folder, label and inputs for both the restore and the keep.
BUILD_CACHE_SH := sh tests/build_cache.sh

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# A build that fails stops here with the compiler's message (pip's editable install would have gone on without it:
# the extension is optional there, for machines without a compiler).
$(SPEEDUPS_SO) &: $(SPEEDUPS_SRC) setup.py | $(STAMP)
	$(PY) setup.py -q build_ext --inplace --build-temp $(VENV)/build-speedups/temp --build-lib $(VENV)/build-speedups/lib
	$(PY) -c 'import pocketmq.common._speedups, pocketmq.remoting._speedups, pocketmq.storage._speedups'
	touch $(SPEEDUPS_SO)

# The spark extra (PySpark, pyarrow) only for what uses Spark (the suite, the demo, the bench): `make run`
# stays a small install.
$(SPARK_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,spark]'
	touch $(SPARK_STAMP)

# Real RocketMQ clients for tests/native_clients (and RocketMQ 5's Node SDK for tests/proxy): the C++ client (PyPI rocketmq 0.4.4, librocketmq bundled)
# in a virtualenv of its own, since other packages also import as `rocketmq`, and ali-ons (npm) pinned by
# tests/native_clients/node/package-lock.json. Node and npm come from Debian when missing.
CPP_VENV := .venv-rocketmq-cpp
CPP_STAMP := $(CPP_VENV)/.installed
NODE_DIR := tests/native_clients/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
# Apache RocketMQ 5's Node SDK (rocketmq-client-nodejs, gRPC) for tests/proxy, pinned by its package-lock.json.
NODE5_DIR := tests/native_clients/node5
NODE5_STAMP := $(NODE5_DIR)/node_modules/.installed

$(CPP_STAMP):
	test -x $(CPP_VENV)/bin/python || $(PYTHON) -m venv $(CPP_VENV)
	$(CPP_VENV)/bin/python -m pip install --quiet 'rocketmq==0.4.4'
	touch $(CPP_STAMP)

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null || \
	  $(call apt_install,--no-install-recommends nodejs npm)
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	touch $(NODE_STAMP)

$(NODE5_STAMP): $(NODE5_DIR)/package.json $(NODE5_DIR)/package-lock.json $(NODE_STAMP)
	cd $(NODE5_DIR) && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	touch $(NODE5_STAMP)

native-clients: $(CPP_STAMP) $(NODE_STAMP) $(NODE5_STAMP)

# ---- Apache RocketMQ's Go client and a Spring Boot application (issue 27) ------------------------------------
# rocketmq-client-go v2 in tests/native_clients/go/main.go, pinned by its go.mod and go.sum, built into
# go/bin/goclient when a source changed; modules come from the Go module proxy into Go's module cache (~/go/pkg/mod), kept between runs.
# Go comes from Debian when missing (go.mod asks for 1.18). A failed build stops `make test` with one line.
GO_DIR := tests/native_clients/go
GO_CLIENT := $(GO_DIR)/bin/goclient

$(GO_CLIENT): $(GO_DIR)/main.go $(GO_DIR)/go.mod $(GO_DIR)/go.sum
	@command -v go >/dev/null || $(call apt_install,--no-install-recommends golang-go) || \
	  { echo "make go-client: Go is not installed and apt-get could not install golang-go"; exit 1; }
	@cd $(GO_DIR) && go build -mod=readonly -buildvcs=false -o bin/goclient . >bin.log 2>&1 || \
	  { echo "make go-client: could not build rocketmq-client-go v2: $$(grep -v '^#' bin.log | tail -1) (see $(GO_DIR)/bin.log)"; exit 1; }
	@rm -f $(GO_DIR)/bin.log

go-client: $(GO_CLIENT)

native-clients: go-client

# Apache RocketMQ 5's Go SDK (github.com/apache/rocketmq-clients/golang/v5, gRPC) in tests/native_clients/go5/main.go,
# pinned by its go.mod and go.sum, for tests/proxy/test_go_sdk.py: built into go5/bin/go5client when a source
# changed, modules from the Go module proxy into Go's module cache, kept between runs. go.mod asks for Go 1.24.
GO5_DIR := tests/native_clients/go5
GO5_CLIENT := $(GO5_DIR)/bin/go5client

$(GO5_CLIENT): $(GO5_DIR)/main.go $(GO5_DIR)/go.mod $(GO5_DIR)/go.sum
	@command -v go >/dev/null || $(call apt_install,--no-install-recommends golang-go) || \
	  { echo "make go5-client: Go is not installed and apt-get could not install golang-go"; exit 1; }
	@cd $(GO5_DIR) && go build -mod=readonly -buildvcs=false -o bin/go5client . >bin.log 2>&1 || \
	  { echo "make go5-client: could not build the RocketMQ 5 Go SDK driver: $$(grep -v '^#' bin.log | tail -1) (see $(GO5_DIR)/bin.log)"; exit 1; }
	@rm -f $(GO5_DIR)/bin.log

go5-client: $(GO5_CLIENT)

native-clients: go5-client

# Apache RocketMQ 5's Rust SDK (crates.io `rocketmq`, gRPC) in tests/native_clients/rust5, pinned by its Cargo.lock,
# for tests/proxy/test_rust_sdk.py: built when a source changed and copied to rust5/bin/rust5client, offline first
# (crates in Cargo's cache, ~/.cargo/registry), else from crates.io. Cargo's target folder is kept outside the work
# tree (RUST5_TARGET), as Go's build cache and ~/.m2 are, so a fresh clone rebuilds only the driver itself, not its
# ~250 dependencies (about 9 CPU-minutes the first time on a machine). The crate ships its generated protocol code:
# no protoc is needed. Rust comes from rustup (Debian's rustc is too old for the crate's dependencies).
RUST5_DIR := tests/native_clients/rust5
RUST5_CLIENT := $(RUST5_DIR)/bin/rust5client
RUST5_TARGET ?= $(HOME)/.cache/pocketmq/rust5-target
CARGO ?= $(shell command -v cargo || echo $(HOME)/.cargo/bin/cargo)

$(RUST5_CLIENT): $(RUST5_DIR)/src/main.rs $(RUST5_DIR)/Cargo.toml $(RUST5_DIR)/Cargo.lock
	@test -x $(CARGO) || { echo "make rust5-client: cargo is not installed (rustup's, 1.70 or newer)"; exit 1; }
	@cd $(RUST5_DIR) && export CARGO_TARGET_DIR=$(RUST5_TARGET) && \
	  { $(CARGO) build --release --locked --offline -q >build.log 2>&1 || $(CARGO) build --release --locked -q >build.log 2>&1; } || \
	  { echo "make rust5-client: could not build the RocketMQ 5 Rust SDK driver: $$(grep -m1 '^error' build.log) (see $(RUST5_DIR)/build.log)"; exit 1; }
	@mkdir -p $(RUST5_DIR)/bin && cp $(RUST5_TARGET)/release/rust5client $(RUST5_CLIENT)
	@rm -f $(RUST5_DIR)/build.log

rust5-client: $(RUST5_CLIENT)

# Not in `make test`: the crate and its dependencies take about 500 s of CPU to build on a new machine, more than
# the suite's budget can spare. `make test-rust5` builds the driver and runs its tests.
test-rust5: $(STAMP) rust5-client
	$(PY) -m pytest -q -m rust5 tests/proxy/test_rust_sdk.py

# A Spring Boot application on rocketmq-spring-boot-starter (tests/native_clients/spring, a Maven project), built
# into spring/target/spring-client.jar when a source changed: offline first (artifacts in ~/.m2), else from Maven
# Central. A JDK and Maven come from Debian when missing. A failed build stops `make test` with one line.
SPRING_DIR := tests/native_clients/spring
SPRING_JAR := $(SPRING_DIR)/target/spring-client.jar
SPRING_SRC := $(shell find $(SPRING_DIR)/src -type f 2>/dev/null)
SPRING_CACHE := $(SPRING_DIR)/target spring-client Makefile $(SPRING_DIR)/pom.xml $(SPRING_SRC)

$(SPRING_JAR): $(SPRING_DIR)/pom.xml $(SPRING_SRC)
	@command -v mvn >/dev/null && command -v javac >/dev/null || \
	  $(call apt_install,--no-install-recommends openjdk-17-jdk-headless maven) || \
	  { echo "make spring-client: a JDK and Maven are not installed and apt-get could not install them"; exit 1; }
	@$(BUILD_CACHE_SH) restore $(SPRING_CACHE) || { \
	  (cd $(SPRING_DIR) && { $(MVN) -B -q -o -Dstyle.color=never package -DskipTests >build.log 2>&1 || $(MVN) -B -q -Dstyle.color=never package -DskipTests >build.log 2>&1; } || \
	    { echo "make spring-client: could not build the Spring application: $$(grep -m1 ERROR build.log) (see $(SPRING_DIR)/build.log)"; exit 1; }) && \
	  rm -f $(SPRING_DIR)/build.log && \
	  $(BUILD_CACHE_SH) keep $(SPRING_CACHE); }
	@touch $(SPRING_JAR)

spring-client: $(SPRING_JAR)

native-clients: spring-client
# ---- end of the Go client and Spring application block -------------------------------------------------------

# The console's browser tests (tests/console/test_browser.py): Debian's Chromium, driven by Playwright for Python
# (the dev extra) through executable_path, so Playwright downloads no browser of its own.
BROWSER_STAMP := $(VENV)/.installed-browser

$(BROWSER_STAMP): $(STAMP)
	@command -v chromium >/dev/null || \
	  $(call apt_install,chromium chromium-driver)
	touch $(BROWSER_STAMP)

browser: $(BROWSER_STAMP)

# Spark and Apache RocketMQ need Java 17; the Java clients of tests/ are built with its JDK and Maven. A fresh
# Debian/Ubuntu machine gets them from apt.
java:
	@command -v java >/dev/null && command -v javac >/dev/null && command -v mvn >/dev/null || \
	  $(call apt_install,openjdk-17-jdk-headless maven)

# Apache RocketMQ itself, the reference the suite compares pocketmq with (tests/apache/): name server, broker and
# mqadmin (and 5.x's proxy) from Maven Central, one folder of jars per version, resolved once (Maven keeps them
# in ~/.m2; the stamp keeps make from asking again). tests/apache/apache_rocketmq.py names the same versions.
APACHE_ROCKETMQ_VERSIONS := 4.9.7 5.5.0
APACHE_DIR := .apache-rocketmq
APACHE_STAMPS := $(foreach v,$(APACHE_ROCKETMQ_VERSIONS),$(APACHE_DIR)/$(v)/.resolved)
APACHE_CACHE = $(APACHE_DIR)/$*/lib apache-$* Makefile tests/apache/pom.xml

$(APACHE_DIR)/%/.resolved: tests/apache/pom.xml | java
	$(BUILD_CACHE_SH) restore $(APACHE_CACHE) || { \
	  rm -rf $(APACHE_DIR)/$*/lib && mkdir -p $(APACHE_DIR) && \
	  { $(MVN) -B -q -f tests/apache/pom.xml -Drocketmq.version=$* $(if $(filter 5.%,$*),-Pproxy) \
	    dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(APACHE_DIR)/$*/lib >$(APACHE_DIR)/$*.log 2>&1 || \
	    { echo "make apache-rocketmq: Apache RocketMQ $* could not be fetched from Maven Central (see $(APACHE_DIR)/$*.log)"; exit 1; }; } && \
	  $(BUILD_CACHE_SH) keep $(APACHE_CACHE); }
	touch $@

# mqadmin's commands in one JVM per tools version and concurrent caller (tests/apache/mqadmin_runner.py), instead of
# a JVM per command: compiled without RocketMQ on the class path (it calls MQAdminStartup by reflection).
MQADMIN_RUNNER := $(APACHE_DIR)/mqadmin-runner/io/pocketmq/tests/MqadminRunner.class

$(MQADMIN_RUNNER): tests/apache/java/MqadminRunner.java | java
	rm -rf $(APACHE_DIR)/mqadmin-runner
	javac -d $(APACHE_DIR)/mqadmin-runner $<

apache-rocketmq: $(APACHE_STAMPS) $(MQADMIN_RUNNER)

# The Java client harness (tests/java_client): one source tree built against each RocketMQ Java client the suite
# runs, 4.9.8 and 5.x's remoting client, into .java-clients/<version>/ (harness.jar and lib/). Rebuilt only when its
# sources change; Maven keeps the artifacts in ~/.m2. tests/java_client/java_harness.py names the same versions.
JAVA_CLIENT_VERSIONS := 4.9.8 5.5.0
JAVA_CLIENT_DIR := .java-clients
JAVA_CLIENT_SOURCES := tests/java_client/pom.xml $(shell find tests/java_client/src -name '*.java' 2>/dev/null)
JAVA_CLIENT_STAMPS := $(foreach v,$(JAVA_CLIENT_VERSIONS),$(JAVA_CLIENT_DIR)/$(v)/.built)
JAVA_CLIENT_CACHE = $(JAVA_CLIENT_DIR)/$* java-client-$* Makefile $(JAVA_CLIENT_SOURCES)

$(JAVA_CLIENT_DIR)/%/.built: $(JAVA_CLIENT_SOURCES) | java
	$(BUILD_CACHE_SH) restore $(JAVA_CLIENT_CACHE) || { \
	  rm -rf $(JAVA_CLIENT_DIR)/$* && mkdir -p $(JAVA_CLIENT_DIR) && \
	  { $(MVN) -B -q -f tests/java_client/pom.xml -Drocketmq.client.version=$* $(if $(filter 4.%,$*),-Pclient4) \
	    -Dharness.out=$(CURDIR)/$(JAVA_CLIENT_DIR)/$* -DskipTests package dependency:copy-dependencies \
	    >$(JAVA_CLIENT_DIR)/$*.log 2>&1 || \
	    { echo "make java-clients: rocketmq-client $* could not be fetched from Maven Central or built (see $(JAVA_CLIENT_DIR)/$*.log)"; exit 1; }; } && \
	  $(BUILD_CACHE_SH) keep $(JAVA_CLIENT_CACHE); }
	touch $@

java-clients: $(JAVA_CLIENT_STAMPS)

# Apache RocketMQ 5's gRPC SDK for Java (rocketmq-client-java, tests/java_sdk/pom.xml names the version) and the
# harness that drives it (tests/java_sdk, bench/java_sdk.py), built into .java-sdk/ (harness.jar and lib/) when a
# source changed; Maven keeps the artifacts in ~/.m2.
JAVA_SDK_DIR := .java-sdk
JAVA_SDK_SOURCES := tests/java_sdk/pom.xml $(shell find tests/java_sdk/src -name '*.java' 2>/dev/null)
JAVA_SDK_STAMP := $(JAVA_SDK_DIR)/.built
JAVA_SDK_CACHE := $(JAVA_SDK_DIR) java-sdk Makefile $(JAVA_SDK_SOURCES)

$(JAVA_SDK_STAMP): $(JAVA_SDK_SOURCES) | java
	$(BUILD_CACHE_SH) restore $(JAVA_SDK_CACHE) || { \
	  rm -rf $(JAVA_SDK_DIR) && \
	  { $(MVN) -B -q -f tests/java_sdk/pom.xml -Dharness.out=$(CURDIR)/$(JAVA_SDK_DIR) -DskipTests package \
	    dependency:copy-dependencies >$(JAVA_SDK_DIR).log 2>&1 || \
	    { echo "make java-sdk: rocketmq-client-java could not be fetched from Maven Central or built (see $(JAVA_SDK_DIR).log)"; exit 1; }; } && \
	  rm -f $(JAVA_SDK_DIR).log && $(BUILD_CACHE_SH) keep $(JAVA_SDK_CACHE); }
	touch $@

java-sdk: $(JAVA_SDK_STAMP)

# A name server and a broker in one process, store in ./.pocketmq; Ctrl-C stops it cleanly. It builds the C
# accelerators too, but a machine without a C compiler or Python's headers runs the pure Python, which behaves the
# same, slower (README): a warning says so and names the build's log. `make test` and `make bench` still stop on a
# failed build, since the suite tests the C.
SPEEDUPS_LOG := $(VENV)/build-speedups.log

run: $(STAMP)
	@$(MAKE) -q --no-print-directory $(SPEEDUPS_SO) 2>/dev/null || { \
	  echo "make run: building the C accelerators (log: $(SPEEDUPS_LOG))"; \
	  $(MAKE) --no-print-directory $(SPEEDUPS_SO) >$(SPEEDUPS_LOG) 2>&1 || \
	  echo "make run: warning: the C accelerators did not build (see $(SPEEDUPS_LOG)); running the pure Python:" \
	    "the same behaviour, slower"; }
	$(VENV)/bin/pocketmq dev

# The storage demo and inspector: a small store written and shown file by file. The demo replaces the
# store in .pocketmq-demo, so this runs any number of times.
demo: $(STAMP)
	$(PY) -m pocketmq.storage demo .pocketmq-demo --small --messages 200
	$(PY) -m pocketmq.storage inspect .pocketmq-demo --limit 5

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# Default checks everywhere, strict ones for pocketmq.remoting and pocketmq.common ([tool.mypy] in
# pyproject.toml). It needs the spark extra: pyspark_pocketmq is checked against PySpark's own types.
# Its cache lives outside the checkout, so a fresh clone (as CI's) checks in about a second what took ~17 CPU-s:
# mypy takes a cached module whose file is newer but whose contents hash the same.
MYPY_CACHE ?= $(HOME)/.cache/pocketmq/mypy
typecheck: $(SPARK_STAMP)
	$(VENV)/bin/mypy --cache-dir $(MYPY_CACHE)

# What the suite needs, built in parallel: pip, mypy, npm, Go and Maven overlap instead of taking turns.
TEST_NEEDS := $(SPARK_STAMP) $(SPEEDUPS_SO) lint typecheck java native-clients browser apache-rocketmq java-clients java-sdk

test-needs: $(TEST_NEEDS)

test:
	@$(MAKE) --no-print-directory -j 4 --output-sync=target test-needs
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=25

# Order events streamed through Spark into per-minute aggregates, on a cluster of its own (examples/).
spark-demo: $(SPARK_STAMP) java
	$(PY) examples/spark_pipeline.py

# bench/apache.py's Java side: RocketMQ's Java client 4.9.8 driving the e2e workloads (bench/java).
BENCH_JAVA_STAMP := bench/java/target/.built

$(BENCH_JAVA_STAMP): bench/java/pom.xml $(wildcard bench/java/src/main/java/io/pocketmq/bench/*.java) | java
	mvn -B -q -f bench/java/pom.xml package dependency:copy-dependencies -DoutputDirectory=target/lib
	touch $@

# The peers of bench/e2e.py (Redis 7, NATS JetStream) come from Debian when missing; their Python clients
# from the `bench` extra; Apache RocketMQ (bench/apache.py) from Maven Central. The benches install nothing.
bench: $(SPARK_STAMP) $(SPEEDUPS_SO) java apache-rocketmq $(BENCH_JAVA_STAMP) java-sdk
	@command -v redis-server >/dev/null && command -v nats-server >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq redis-server nats-server; } || \
	  echo "make bench: could not install redis-server/nats-server; bench/e2e.py will skip those peers"
	$(PY) -m pip install --quiet -e '.[dev,bench,spark]'
	$(PY) bench/storage.py
	$(PY) bench/e2e.py
	$(PY) bench/tail.py
	$(PY) bench/apache.py
	$(PY) bench/java_sdk.py
	$(PY) bench/python_sdk.py
	$(PY) bench/scale.py
	$(PY) bench/spark.py

# The store handed between pocketmq and Apache RocketMQ 4.9.7 (tests/apache/test_store_both_ways.py) at the
# issue's 100,000 messages, each way, with the time of each phase (minutes; the suite runs 400 messages).
store-handover: $(STAMP) java apache-rocketmq
	$(PY) bench/store_handover.py

# Issue 28's fuzzing with Apache RocketMQ as the oracle, many more examples than `make test` runs, drawn anew.
FUZZ_EXAMPLES ?= 2000
fuzz-apache: $(STAMP) java apache-rocketmq
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:randomly tests/apache/test_differential_fuzz.py \
		tests/apache/test_differential_fuzz_consumer.py tests/apache/test_differential_fuzz_pop_5.py \
		tests/apache/test_differential_fuzz_config.py tests/apache/test_differential_fuzz_namesrv.py \
		tests/apache/test_differential_fuzz_send.py tests/apache/test_differential_fuzz_bodies.py \
		tests/apache/test_differential_fuzz_admin_5.py tests/apache/test_differential_fuzz_frames.py \
		tests/apache/test_differential_fuzz_acl.py tests/apache/test_differential_fuzz_timer_5.py \
		tests/apache/test_differential_fuzz_filters.py tests/apache/test_differential_fuzz_pull.py \
		tests/apache/test_differential_fuzz_send_back.py \
		tests/apache/test_differential_fuzz_query.py \
		tests/proxy/test_grpc_differential_fuzz.py

clean:
	rm -rf $(VENV) $(SPEEDUPS_SO) $(CPP_VENV) $(NODE_DIR)/node_modules $(GO_DIR)/bin $(GO5_DIR)/bin $(RUST5_DIR)/bin $(RUST5_DIR)/target $(SPRING_DIR)/target .pocketmq .pocketmq-demo $(APACHE_DIR) $(JAVA_CLIENT_DIR) $(JAVA_SDK_DIR) $(NODE5_DIR)/node_modules
