# frozen_string_literal: true

require_relative "lib/lease_machines/version"

Gem::Specification.new do |spec|
  spec.name = "lease_machines"
  spec.version = LeaseMachines::VERSION
  spec.authors = ["lease_machines contributors"]
  spec.summary = "Time-limited ownership with fencing tokens, decided by a no_std Rust core"
  spec.description = <<~TEXT.tr("\n", " ").strip
    Leases with fencing tokens for Ruby jobs and workers: an Authority grants time-limited ownership with a token that
    only grows, and a Fence at the protected resource refuses any token older than the newest it has seen. The
    decisions come from the deterministic lease-machines Rust crate; the caller passes time in.
  TEXT
  spec.homepage = "https://github.com/lease-machines/lease_machines"
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.2", "< 4.1.dev"
  spec.metadata = {
    "source_code_uri" => spec.homepage,
    "changelog_uri" => "#{spec.homepage}/blob/main/CHANGELOG.md",
    "rubygems_mfa_required" => "true",
    "cargo_crate_name" => "lease_machines_native",
    "cargo_manifest_path" => "ffi/Cargo.toml"
  }

  # The source gem carries the whole Cargo workspace (the core and simulation crates included) and compiles it on install.
  spec.files = Dir[
    "lib/**/*.rb", "lib/**/*.sql", "lib/**/*.lua", "lib/**/*.tt", "sig/**/*.rbs", "ext/**/*.rb", "exe/*",
    "Cargo.toml", "Cargo.lock", "core/Cargo.toml", "core/src/**/*.rs", "core/benches/*.rs", "core/*.md", "core/LICENSE.txt",
    "sim/Cargo.toml", "sim/src/**/*.rs", "sim/benches/*.rs",
    "ffi/Cargo.toml", "ffi/src/**/*.rs",
    "README.md", "CHANGELOG.md", "LICENSE.txt"
  ]
  spec.require_paths = ["lib"]
  spec.bindir = "exe"
  spec.executables = ["lease_machines"]
  spec.extensions = ["ext/lease_machines_native/extconf.rb"]

  spec.add_dependency "rb_sys", "~> 0.9.130"
  # The progress bar of `lease_machines simulate` on a terminal.
  spec.add_dependency "ruby-progressbar", "~> 1.13"
end
