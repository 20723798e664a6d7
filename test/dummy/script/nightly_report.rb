# frozen_string_literal: true

# bin/rails runner script/nightly_report.rb: one NightlyReportJob performed in the booted application, then what the
# Railtie set up, as JSON for the test to read.
require "json"

released = []
ActiveSupport::Notifications.subscribe("release.lease_machines") { released << _1.payload[:status] }
account = Account.create!(name: "Acme")
NightlyReportJob.perform_now(account)
configuration = LeaseMachines::ActiveJob.configuration
declaration = LeaseMachines::ActiveJob::Declarations::TABLE[NightlyReportJob]
leases = ActiveRecord::Base.connection.select_rows("SELECT resource, token, owner FROM lease_machines_leases")
puts JSON.generate(
  included: ActiveJob::Base.include?(LeaseMachines::ActiveJob),
  default_ttl: configuration.default_ttl,
  ttl: declaration&.ttl,
  executor: configuration.executor.equal?(Rails.application.executor),
  fence_record: configuration.fence_record&.name,
  default_store: configuration.store.equal?(LeaseMachines::Railtie::APPLICATION_DATABASE),
  report: Report.pluck(:token, :body),
  leases: leases,
  fences: ActiveRecord::Base.connection.select_rows("SELECT resource, highest FROM lease_machines_fences"),
  released: released.map(&:to_s)
)
