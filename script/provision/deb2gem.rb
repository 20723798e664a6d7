# frozen_string_literal: true

# Repackages a Debian Ruby library (.deb) as an ordinary .gem, so that `gem install --local` can install it into a
# Ruby of our own. Debian ships each arch:all gem unpacked under /usr/share/rubygems-integration/all, with its
# specification beside it; the specification names the gem and its dependencies, the unpacked tree is the content.
# Some packages (ruby-useragent) ship only the specification there and the library in /usr/lib/ruby/vendor_ruby, the
# older layout of Debian's Ruby packages: the gem's tree is then put together from that library, the package's
# documents and its executables in /usr/bin.
#
# Only arch:all packages (pure Ruby): a package with a C extension is built for Debian's own libruby, and such gems
# are built here from their sources instead (gems.sh, local_gems.sh).
#
#   ruby script/provision/deb2gem.rb PACKAGE.deb OUTPUT_DIR    # prints the path of each .gem it wrote
require "fileutils"
require "rubygems/package"
require "tmpdir"

source, out_dir = ARGV
abort "usage: #{$PROGRAM_NAME} PACKAGE.deb OUTPUT_DIR" unless source && out_dir
Gem::DefaultUserInteraction.ui = Gem::SilentUI.new # stdout carries only the paths written

# The gem's tree from the older layout (see above), in tree/gem.
def from_vendor_ruby(tree, spec)
  gem_dir = File.join(tree, "gem")
  lib = File.join(gem_dir, spec.require_paths.first)
  FileUtils.mkdir_p(lib)
  FileUtils.cp_r(File.join(tree, "usr/lib/ruby/vendor_ruby", "."), lib)
  docs = Dir[File.join(tree, "usr/share/doc/*/*")].to_h { |path| [File.basename(path), path] }
  spec.files.grep_v(%r{/}).each { |name| FileUtils.cp(docs[name], gem_dir) if docs[name] }
  spec.executables.each do |name|
    next unless File.file?(File.join(tree, "usr/bin", name))

    FileUtils.mkdir_p(File.join(gem_dir, spec.bindir))
    FileUtils.cp(File.join(tree, "usr/bin", name), File.join(gem_dir, spec.bindir))
  end
  gem_dir
end

def repack(tree, out_dir)
  specs = Dir[File.join(tree, "usr/share/rubygems-integration/*/specifications/*.gemspec")]
  abort "#{tree}: no gem specification under usr/share/rubygems-integration" if specs.empty?

  specs.each do |spec_path|
    spec = Gem::Specification.load(spec_path) or abort "#{spec_path}: not a gem specification"
    root = File.dirname(spec_path, 2)
    # "all", or the Ruby ABI ("3.3.0") a C extension was built for
    abi = File.basename(root)
    abort "#{spec_path}: built for Debian's Ruby #{abi}, not arch:all" unless abi == "all"
    gem_dir = File.join(root, "gems", spec.full_name)
    if !File.directory?(gem_dir) && specs.size == 1 && File.directory?(File.join(tree, "usr/lib/ruby/vendor_ruby"))
      gem_dir = from_vendor_ruby(tree, spec)
    end
    abort "#{spec_path}: #{spec.full_name} has no unpacked tree" unless File.directory?(gem_dir)

    Dir.chdir(gem_dir) do
      # The gem is what the package installs, nothing else: a specification's test files are not in the package
      # (childprocess's lists its spec/), and rubygems would add them to the files to pack.
      spec.test_files = []
      spec.files = Dir.glob("**/*", File::FNM_DOTMATCH).select { |path| File.file?(path) }.sort
      spec.signing_key = nil
      spec.cert_chain = []
      built = Gem::Package.build(spec, true)
      FileUtils.mv(built, File.join(out_dir, File.basename(built)))
      puts File.join(out_dir, File.basename(built))
    end
  end
end

Dir.mktmpdir("deb2gem") do |tree|
  system("dpkg-deb", "-x", source, tree, exception: true)
  repack(tree, File.expand_path(out_dir))
end
