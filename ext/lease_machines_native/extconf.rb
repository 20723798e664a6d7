# frozen_string_literal: true

# Builds the Rust extension (the `ffi/` crate of the Cargo workspace) with rb_sys. Used by `rake compile` and by
# `gem install` of the source gem, which carries the whole workspace.
require "mkmf"
require "rb_sys/mkmf"

create_rust_makefile("lease_machines/lease_machines_native") do |config|
  config.ext_dir = "../../ffi" # relative to this directory, as rb_sys expects
  # Build exactly the dependency versions the repository (and the source gem) locked.
  config.extra_cargo_args += ["--locked"] if File.exist?(File.expand_path("../../Cargo.lock", __dir__))
end
