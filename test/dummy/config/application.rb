# frozen_string_literal: true

# The tiny application the Railtie and the install generator are tested in: ActiveRecord and ActiveJob on SQLite (or
# on PostgreSQL, with DATABASE_URL), lease_machines loaded the way Bundler.require loads it (after Rails).
require_relative "boot"
require "rails"
require "active_record/railtie"
require "active_job/railtie"
require "lease_machines"

module Dummy
  class Application < Rails::Application
    config.load_defaults Rails::VERSION::STRING.to_f # the lane's: 8.1, or 7.2 (gemfiles/rails_7_2.gemfile)
    config.root = File.expand_path("..", __dir__)
    config.eager_load = false
    config.enable_reloading = false # as a generated application's config/environments/test.rb has it
    config.logger = Logger.new(File::NULL)
    config.active_job.queue_adapter = :test
    config.secret_key_base = "dummy-app-of-lease-machines"
    config.lease_machines.default_ttl = 30.seconds
    # The fence record, named once the application's code can be loaded (as the gem's README says); not in the test
    # of another adapter, which only names it (ApplicationRecord would connect).
    config.to_prepare { LeaseMachines::Jobs.fence_record = ApplicationRecord } unless ENV["DUMMY_ADAPTER"]
    # The test of a misspelt option sets it (a boot must fail, naming it).
    config.lease_machines.renew_evry = 5 if ENV["DUMMY_MISSPELT_OPTION"]
  end
end
