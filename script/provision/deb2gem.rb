# frozen_string_literal: true

# Repackages a Debian arch:all Ruby library (.deb) as an ordinary .gem, so that `gem install --local` can install it
# into a Ruby of our own. Debian ships each gem unpacked under /usr/share/rubygems-integration/all, with its
# specification beside it; the specification names the gem and its dependencies, the unpacked tree is the content.
# Some packages (ruby-useragent) ship only the specification there and the library in /usr/lib/ruby/vendor_ruby, the
# older layout of Debian's Ruby packages: the gem's tree is then put together from that library, the package's
# documents and its executables in /usr/bin.
#
#   ruby script/provision/deb2gem.rb PACKAGE.deb OUTPUT_DIR    # prints the path of each .gem it wrote
require "fileutils"
require "rubygems/package"
require "tmpdir"

deb, out_dir = ARGV
abort "usage: #{$PROGRAM_NAME} PACKAGE.deb OUTPUT_DIR" unless deb && out_dir
Gem::DefaultUserInteraction.ui = Gem::SilentUI.new # stdout carries only the paths written

Dir.mktmpdir("deb2gem") do |tree|
  system("dpkg-deb", "-x", deb, tree, exception: true)
  root = File.join(tree, "usr/share/rubygems-integration/all")
  specs = Dir[File.join(root, "specifications", "*.gemspec")]
  abort "#{deb}: no gem specification under #{root}" if specs.empty?

  vendor_ruby = File.join(tree, "usr/lib/ruby/vendor_ruby")
  specs.each do |spec_path|
    spec = Gem::Specification.load(spec_path) or abort "#{spec_path}: not a gem specification"
    gem_dir = File.join(root, "gems", spec.full_name)
    if !File.directory?(gem_dir) && specs.size == 1 && File.directory?(vendor_ruby)
      gem_dir = File.join(tree, "gem")
      FileUtils.mkdir_p(File.join(gem_dir, spec.require_paths.first))
      FileUtils.cp_r(File.join(vendor_ruby, "."), File.join(gem_dir, spec.require_paths.first))
      docs = Dir[File.join(tree, "usr/share/doc/*/*")].to_h { |path| [File.basename(path), path] }
      spec.files.grep_v(%r{/}).each { |name| FileUtils.cp(docs[name], gem_dir) if docs[name] }
      spec.executables.each do |name|
        next unless File.file?(File.join(tree, "usr/bin", name))

        FileUtils.mkdir_p(File.join(gem_dir, spec.bindir))
        FileUtils.cp(File.join(tree, "usr/bin", name), File.join(gem_dir, spec.bindir))
      end
    end
    abort "#{deb}: #{spec.full_name} has no unpacked tree" unless File.directory?(gem_dir)

    Dir.chdir(gem_dir) do
      spec.files = Dir.glob("**/*", File::FNM_DOTMATCH).select { |path| File.file?(path) }.sort
      spec.signing_key = nil
      spec.cert_chain = []
      built = Gem::Package.build(spec, true)
      FileUtils.mv(built, File.join(out_dir, File.basename(built)))
      puts File.join(out_dir, File.basename(built))
    end
  end
end
