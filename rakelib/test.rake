# frozen_string_literal: true

require "rake/testtask"

# The minitest suite against the compiled extension.
Rake::TestTask.new(:test) do |t|
  t.libs << "test" << "lib"
  t.test_files = FileList["test/**/*_test.rb"]
  t.warning = true
end
task test: :compile

# The GC.stress pass is for the objects the extension makes, holds and hands out: every test file but these, which
# check other things (the README's text, the SQLite store's SQL through the sqlite3 gem, the command line's output,
# child processes, ActiveJob and ActiveRecord, the PostgreSQL store's SQL through the pg gem and its server) and under GC.stress would spend minutes on other
# libraries' allocations (the README's examples alone 116 s). Their extension objects are the ones the other files make.
GC_STRESS_EXCLUDED = (%w[readme_test store_test store_inputs_test store_interrupt_test store_soak_test cli_test
                         worker_seven_test nightly_report_test railtie_test postgres_cluster_test
                         store_postgresql_test store_postgresql_faults_test jobs_layout_test store_semaphore_test] +
                      FileList["test/active_job_*_test.rb"].map { File.basename(_1, ".rb") }).freeze

namespace :test do
  desc "Run the suite's extension tests again with GC.stress on (catches objects the extension fails to keep alive)"
  task gc_stress: :compile do
    files = FileList["test/**/*_test.rb"].reject { GC_STRESS_EXCLUDED.include?(File.basename(_1, ".rb")) }
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
       *FileList["test/**/*_test.rb"]
  end
end

namespace :rbs do
  desc "Validate sig/ with rbs"
  task :validate do
    sh FileUtils::RUBY, "-S", "rbs", "-I", "sig", "validate"
  end
end
