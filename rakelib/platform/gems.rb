# frozen_string_literal: true

require_relative "support"

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
end
