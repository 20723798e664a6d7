# frozen_string_literal: true

require "rb_sys/extensiontask"

# The crate lives in ffi/ (a member of the Cargo workspace), its extconf.rb in ext/lease_machines_native/ where
# gem installs look for it. rb_sys's rake task points cargo at the extconf's directory unless told otherwise here
# (`gem install` needs no such help: the extconf itself names ../../ffi).
ENV["RB_SYS_CARGO_MANIFEST_DIR"] ||= File.expand_path("../ffi", __dir__)

# `rake compile` builds ffi/ with cargo (through ext/lease_machines_native/extconf.rb) and copies the extension to
# lib/lease_machines/lease_machines_native.so, where lib/lease_machines.rb finds a source build.
RbSys::ExtensionTask.new("lease_machines_native", GEMSPEC) do |ext|
  ext.ext_dir = "ext/lease_machines_native"
  ext.lib_dir = "lib/lease_machines"
end
