# frozen_string_literal: true

# The precompiled gems, built and proved on this x86_64 machine (after `bin/setup --platforms`):
#
#   bin/rake platform          # lint:workflows, platform:gems, platform:check, platform:prove
#
# - platform:gems builds the four artefacts in pkg/: lease_machines-VERSION-x86_64-linux.gem and
#   -aarch64-linux.gem, each a fat gem with lib/lease_machines/X.Y/lease_machines_native.so for every CRuby minor in
#   script/toolchain.env's LM_PLATFORM_MINORS; the source gem, which compiles with cargo on install; and SHA256SUMS.
#   Each .so is built by cargo-zigbuild for `<target>.2.17`, so it needs no glibc newer than 2.17. The x86_64 ones
#   read their Ruby's configuration from that Ruby (RUBY); the aarch64 ones from Debian's aarch64 Ruby of that minor
#   (its RbConfig read under qemu, its paths moved into the sysroot), handed to rb-sys as RBCONFIG_* variables, as
#   rake-compiler's cross builds do.
# - platform:check opens each gem as a gem-build test would: one .so per minor and none at the top of
#   lib/lease_machines/, the right ELF machine, no glibc symbol above the floor, no rb_sys dependency and no Rust
#   sources in native gems, required_ruby_version accepting exactly the built minors, the platform right.
# - platform:prove runs the core and simulation crates' tests for aarch64 under qemu-aarch64-static, then installs
#   each gem into a fresh GEM_HOME and runs the test suite against the installed gem: the x86_64 gem with every
#   x86_64 Ruby, the aarch64 gem with every aarch64 Ruby under qemu, the source gem (compiling on install) with the
#   Ruby rake gem:smoke uses (3.4): rakelib/installed_gem.rb, the same proof as rake gem:smoke's; the four jobs run
#   side by side.
#
# Each task is a file of rakelib/platform/ (gems.rb, check.rb, prove.rb, lint.rb), and what they share the Platform
# module (support.rb); this file loads them (rake loads only rakelib/*.rake).
require_relative "platform/support"
require_relative "platform/gems"
require_relative "platform/check"
require_relative "platform/prove"
require_relative "platform/lint"

desc "Lint the workflows, build the platform gems and the source gem, check them, prove each installed (needs bin/setup --platforms)"
task platform: %w[lint:workflows platform:gems platform:check platform:prove]
