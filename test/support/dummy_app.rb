# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "open3"

module LeaseMachines
  module TestSupport
    # test/dummy, the tiny Rails application, copied for a test and booted in child processes (bin/rails with the
    # checkout's bin/ruby): the Railtie's tests and the mounted dashboard's.
    module DummyApp
      DUMMY = File.expand_path("../dummy", __dir__)
      RUBY = File.expand_path("../../bin/ruby", __dir__)

      # Skips where the dummy cannot boot (a child process, this checkout's files, sqlite3 and railties 7.2 or
      # newer), else copies it into a scratch directory named after +prefix+; returns the copy's path.
      def copy_dummy_app(prefix)
        plain_suite_only!("boots a Rails application in child processes")
        checkout_only!("runs this checkout's dummy application")
        requires_sqlite3!
        begin
          Gem::Specification.find_by_name("railties", ">= 7.2")
        rescue Gem::MissingSpecError
          skip "railties 7.2 or newer is not installed for this Ruby"
        end
        File.join(scratch_dir(prefix), "dummy").tap { FileUtils.cp_r(DUMMY, _1) }
      end

      # bin/rails +args+ in the copy at +app+ (RAILS_ENV test, and +env+): [output and errors, status].
      def dummy_rails(app, *args, env: {})
        Open3.capture2e({ "RAILS_ENV" => "test" }.merge(env), RUBY, "bin/rails", *args, chdir: app)
      end
    end
  end
end
