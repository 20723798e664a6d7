# frozen_string_literal: true

require_relative "support"

namespace :platform do
  desc "Run the core's and the simulation's tests for aarch64 under qemu, and the suite against each gem installed in a fresh GEM_HOME"
  task :prove do
    Bundler.with_unbundled_env do
      jobs = []
      jobs << lambda do |out|
        out.puts "==> the core and simulation crates' tests for aarch64-unknown-linux-gnu, under qemu-aarch64-static"
        cases = ENV.fetch("LEASE_MACHINES_QEMU_PROPTEST_CASES", Platform::QEMU_PROPTEST_CASES)
        system({ "PROPTEST_CASES" => cases }, "cargo", "test", "--locked", "-p", "lease-machines", "-p", "lease-machines-sim",
               "--all-features", "--target", "aarch64-unknown-linux-gnu",
               chdir: Platform::ROOT, out: out, err: out, exception: true)
      end
      jobs << lambda do |out|
        Platform.minors.each do |minor|
          InstalledGem.prove("x86_64-linux, Ruby #{minor}", [Platform.ruby(minor)], Platform.gem_path("x86_64-linux"),
                             out: out)
        end
        # The same proof as rake gem:smoke's (the same Ruby), which bin/test then need not repeat for the same files.
        smoke = InstalledGem.smoke_ruby
        InstalledGem.prove("the source gem, Ruby #{InstalledGem.ruby_version([smoke])}", [smoke], Platform.gem_path,
                           env: InstalledGem.source_gem_env, out: out)
        InstalledGem.proved!(File.read("#{Platform.gem_path}.digest"))
      end
      Platform.minors.each do |minor|
        jobs << lambda do |out|
          InstalledGem.prove("aarch64-linux, Ruby #{minor} under qemu", Platform.under_qemu(minor),
                             Platform.gem_path("aarch64-linux"), env: { "LEASE_MACHINES_TEST_NO_SPAWN" => "1" },
                             dependencies: Platform.runtime_gems, out: out)
        end
      end
      # Side by side: each job is mostly one process at a time. Each one's output is printed whole, in this order.
      InstalledGem.side_by_side(jobs)
    end
  end
end
