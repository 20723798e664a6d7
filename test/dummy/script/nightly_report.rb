# frozen_string_literal: true

# bin/rails runner script/nightly_report.rb: one NightlyReportJob performed in the booted application, then a
# StaleReportJob whose lease another process takes over before it writes, then what the Railtie set up, as JSON for
# the test to read.
require "json"

released = []
ActiveSupport::Notifications.subscribe("release.lease_machines") { released << _1.payload[:status] }
configuration = LeaseMachines::Jobs.configuration
# Another process takes StaleReportJob's lease over as soon as it was granted: Store#transfer, on a store of its own.
ActiveSupport::Notifications.subscribe("acquire.lease_machines") do |event|
  lease = event.payload
  next unless lease[:job].is_a?(StaleReportJob)

  successor = configuration.store.call
  successor.transfer(resource: lease[:resource], owner: lease[:owner], token: lease[:token], new_owner: 4242, ttl: 30.0)
  successor.close
end
account = Account.create!(name: "Acme")
NightlyReportJob.perform_now(account)
stale = begin
  StaleReportJob.perform_now(account)
  nil
rescue LeaseMachines::Fenced => e
  [e.reason, e.token, e.highest]
end
declaration = LeaseMachines::Jobs::Declarations::TABLE[NightlyReportJob]
connection = ActiveRecord::Base.connection
fence_store, = LeaseMachines::Jobs.pool.fence_of(connection.raw_connection)
puts JSON.generate(
  included: ActiveJob::Base.include?(LeaseMachines::HoldsLease),
  default_ttl: configuration.default_ttl,
  ttl: declaration&.ttl,
  executor: configuration.executor.equal?(Rails.application.executor),
  fence_record: configuration.fence_record&.name,
  default_store: configuration.store.equal?(LeaseMachines::Railtie::APPLICATION_DATABASE),
  store: LeaseMachines::Jobs.pool.with { [_1.adapter_name, _1.clock.nil?, _1.path] },
  fence: fence_store && [fence_store.adapter_name, fence_store.database.equal?(connection.raw_connection)],
  report: Report.pluck(:token, :body),
  leases: connection.select_rows("SELECT resource, token, owner FROM lease_machines_leases ORDER BY resource"),
  fences: connection.select_rows("SELECT resource, highest FROM lease_machines_fences ORDER BY resource"),
  stale: stale,
  released: released.map(&:to_s)
)
