# frozen_string_literal: true

# No include: the Railtie gives every job class holds_lease, and no ttl: (config.lease_machines.default_ttl).
class NightlyReportJob < ApplicationJob
  holds_lease key: ->(account) { account }, renew_every: 10.seconds, on_conflict: :raise

  def perform(account)
    lease.check!
    lease.fenced { Report.create!(body: "totals for #{account.name}", token: lease.token) }
  end
end
