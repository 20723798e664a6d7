# frozen_string_literal: true

require "rake/testtask"

# The suite, by area: test/native/ (the extension's objects: records, Authority, Fence, Holder, Table, Election,
# Simulation), test/store/ (the SQLite, PostgreSQL and Redis stores), test/active_job/ (holds_lease, the Railtie),
# test/cli/, test/integration/ (the stories and the binstubs, run as a user runs them), test/docs/ (README,
# CONTRIBUTING, the docs' links), and test/support/ for the helpers they share besides test/test_helper.rb.
TEST_FILES = FileList["test/*/*_test.rb"]

# The minitest suite against the compiled extension.
Rake::TestTask.new(:test) do |t|
  t.libs << "test" << "lib"
  t.test_files = TEST_FILES
  t.warning = true
end
task test: :compile

# The GC.stress pass is for the objects the extension makes, holds and hands out: test/native/, and the files
# elsewhere tagged with a line "# gc_stress: the extension's objects" (the store's fence and schema checks). The others
# check other things (the README's text, SQL through the sqlite3 and pg gems, the command line's output, child
# processes, ActiveJob and ActiveRecord) and under GC.stress would spend minutes on other libraries' allocations (the
# README's examples alone 116 s). Their extension objects are the ones the native tests make.
GC_STRESS_TAG = /^# gc_stress: the extension's objects$/
GC_STRESS_FILES = -> { TEST_FILES.select { _1.start_with?("test/native/") || File.read(_1).match?(GC_STRESS_TAG) } }

# The Rails tests, which run again on the second Rails lane (gemfiles/rails_7_2.gemfile): holds_lease and the Railtie,
# the stories told with real Rails jobs (Solid Queue's, Sidekiq's), the Rails 8.1 features that skip on 7.2 saying so.
RAILS_TEST_FILES = FileList["test/active_job/*_test.rb", "test/integration/nightly_report_test.rb",
                            "test/integration/solid_queue_test.rb",
                            "test/integration/solid_queue_lost_test.rb"].existing

namespace :test do
  desc "Run the Rails tests on Rails 7.2 (gemfiles/rails_7_2.gemfile), the second Rails lane"
  task rails_7_2: :compile do
    gemfile = File.expand_path("../gemfiles/rails_7_2.gemfile", __dir__)
    # A Ruby of its own, outside this one's bundle (Rails 8.1's), in the lane's: so are the children it starts
    # (bin/nightly-report, the dummy app's processes), which read BUNDLE_GEMFILE.
    Bundler.with_original_env do
      env = { "BUNDLE_GEMFILE" => gemfile }
      sh env, FileUtils::RUBY, "-rbundler/setup", "-w", "-Ilib", "-Itest", "-e", <<~RUBY, *RAILS_TEST_FILES
        require "active_record"
        abort "test:rails_7_2 loaded Rails \#{ActiveRecord.version}" unless ActiveRecord.version.to_s.start_with?("7.2.")
        puts "Rails \#{ActiveRecord.version} (gemfiles/rails_7_2.gemfile)"
        ARGV.each { |f| require File.expand_path(f) }
      RUBY
    end
  end

  desc "Run the suite's extension tests again with GC.stress on (catches objects the extension fails to keep alive)"
  task gc_stress: :compile do
    files = GC_STRESS_FILES.call
    # Without the Gemfile's :rails group on the load path (none of these files loads Rails): its 52 of 76 entries made
    # every file of this pass 1.6x slower under GC.stress (holder_test and values_test: 48 s with them, 26 s without).
    env = { "BUNDLE_WITHOUT" => [ENV.fetch("BUNDLE_WITHOUT", nil), "rails"].compact.join(":") }
    sh env, FileUtils::RUBY, "-Ilib", "-Itest", "-e",
       'ENV["LEASE_MACHINES_GC_STRESS"] = "1"; ARGV.each { |f| require File.expand_path(f) }', *files
  end

  desc "Run the suite under RBS runtime type checking, so a signature that lies fails the build"
  task rbs: :compile do
    env = {
      "RBS_TEST_TARGET" => "LeaseMachines::*",
      "RBS_TEST_OPT" => "-I sig",
      "RBS_TEST_LOGLEVEL" => "error",
      "RBS_TEST_RAISE" => "true",
      "LEASE_MACHINES_RBS_TEST" => "1"
    }
    sh env, FileUtils::RUBY, "-Ilib", "-Itest", "-rrbs/test/setup", "-e", "ARGV.each { |f| require File.expand_path(f) }",
       *TEST_FILES
  end
end

namespace :rbs do
  desc "Validate sig/ with rbs"
  task :validate do
    sh FileUtils::RUBY, "-S", "rbs", "-I", "sig", "validate"
  end
end
