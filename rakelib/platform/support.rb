# frozen_string_literal: true

require "digest"
require "fileutils"
require "open3"
require "rubygems/package"
require "tmpdir"
require_relative "../installed_gem"
require_relative "../toolchain"

# What the platform tasks (rakelib/platform.rake, one file of rakelib/platform/ each) share: the platforms and the
# Ruby minors, where the Rubies and the gems are, how an extension is built and a gem packaged, and the checks.
module Platform
  ROOT = File.expand_path("../..", __dir__)
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

  # The Ruby minors the fat gems carry: script/toolchain.env's, or LEASE_MACHINES_PLATFORM_MINORS ("3.2 3.3 ...")
  # when checking gems built elsewhere (the cross-gem workflow).
  def minors
    @minors ||= (ENV["LEASE_MACHINES_PLATFORM_MINORS"] || Toolchain.fetch("LM_PLATFORM_MINORS")).split
  end

  # The platforms platform:check checks: the ones built here, or LEASE_MACHINES_PLATFORMS.
  def checked_platforms = ENV.fetch("LEASE_MACHINES_PLATFORMS", TARGETS.keys.join(" ")).split

  def provisioned(kind, minor)
    path = Toolchain.call(kind, minor)
    abort "platform: no #{kind.delete_prefix("lm_").tr("_", " ")} for Ruby #{minor}; run bin/setup --platforms" if path.empty?
    path
  end

  def ruby(minor) = provisioned("lm_ruby_bin", minor)
  def cross_ruby(minor) = provisioned("lm_cross_ruby_bin", minor)
  def sysroot = Toolchain.arm64_sysroot
  # The gems the gem depends on at run time (ruby-progressbar), as .gem files bin/setup made: the aarch64 Rubies
  # have no gems of their own, so each proof under qemu installs them into its GEM_HOME first.
  def runtime_gems = Dir[File.join(Toolchain.gems, "ruby-progressbar-*.gem")]

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
      "PATH" => [File.join(Toolchain.tools, "venv", "bin"), File.dirname(ruby(minor)),
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
