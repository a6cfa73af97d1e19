# Conventional entry points; meson + ninja do the real build.
# `make demo` and `make test` work as the first command on a fresh Debian machine:
# scripts/ensure-deps installs what is missing (apt needs root; see README).
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILDDIR ?= build
PYTHON   ?= python3

.PHONY: all build deps demo test test-long bench install clean

all: build

deps:
	@PYTHON=$(PYTHON) scripts/ensure-deps

$(BUILDDIR)/build.ninja:
	meson setup $(BUILDDIR) --prefix=$(PREFIX)

build: $(BUILDDIR)/build.ninja
	ninja -C $(BUILDDIR)

demo: deps build
	$(BUILDDIR)/specx bench --demo

test: deps build
	meson test -C $(BUILDDIR) --print-errorlogs
	$(PYTHON) -m pytest tests

test-long: deps build
	meson test -C $(BUILDDIR) --print-errorlogs
	SPECX_TEST_LONG=1 $(PYTHON) -m pytest tests

bench: deps build
	$(BUILDDIR)/specx bench

install: build
	DESTDIR=$(DESTDIR) meson install -C $(BUILDDIR)

clean:
	rm -rf $(BUILDDIR)
