# frozen_string_literal: true

# bin/rails runner script/leases_dashboard.rb: a lease taken through the jobs' store, then the dashboard mounted at
# /leases (config/routes.rb) asked through Rack::Test against Rails.application, as a browser would; what each page
# answered, as JSON for the test to read.
require "json"
require "rack/test"

LeaseMachines::Jobs.pool.with do |store|
  store.acquire(resource: "NightlyReportJob:Account/1", owner: 7, ttl: 600.0)
end
session = Rack::Test::Session.new(Rails.application)
pages = ["/leases", "/leases/", "/leases/resources.json", "/leases/resource?name=NightlyReportJob%3AAccount%2F1",
         "/leases/metrics", "/leases/audit", "/leases/nowhere"].to_h do |path|
  session.get(path)
  response = session.last_response
  [path, { status: response.status, type: response.headers["content-type"], body: response.body }]
end
session.post("/leases/revoke", { resource: "NightlyReportJob:Account/1" }, "HTTP_SEC_FETCH_SITE" => "same-origin")
pages["POST /leases/revoke"] = { status: session.last_response.status, body: session.last_response.body }
puts JSON.generate(pages: pages, default_store: LeaseMachines::Web.default_store.equal?(LeaseMachines::Jobs.pool))
