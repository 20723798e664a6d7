# frozen_string_literal: true

# Builds the Rust extension (the `ffi/` crate of the Cargo workspace) with rb_sys. Used by `rake compile` and by
# `gem install` of the source gem, which carries the whole workspace.
require "mkmf"
require "rb_sys/mkmf"

create_rust_makefile("lease_machines/lease_machines_native") do |config|
  # The crate, relative to this directory. rb_sys strips one leading "./" and joins the rest to $(srcdir), which is
  # this directory wherever mkmf runs (here for `gem install`, under tmp/ for `rake compile`). A bare "../../ffi"
  # would lose its first "." to that strip.
  config.ext_dir = "./../../ffi"
  # Build exactly the dependency versions the repository (and the source gem) locked.
  config.extra_cargo_args += ["--locked"] if File.exist?(File.expand_path("../../Cargo.lock", __dir__))
end
