# frozen_string_literal: true

# A job whose lease another process takes over while it runs (script/nightly_report.rb does, as a successor granted
# once a stalled job's TTL ran out would): its fenced write is refused, and everything in its transaction rolls back.
# The refusal is raised (on_lost: :raise), not retried, for the script to report.
class StaleReportJob < ApplicationJob
  holds_lease key: ->(account) { account }, renew_every: 10.seconds, on_conflict: :raise, on_lost: :raise

  def perform(account)
    Report.transaction do
      Report.create!(body: "summary for #{account.name}", token: lease.token)
      lease.fenced { Report.create!(body: "stale totals for #{account.name}", token: lease.token) }
    end
  end
end
