# frozen_string_literal: true

# The dashboard (LeaseMachines::Web).
namespace :web do
  screenshot = "docs/worker-seven-timeline.png"

  desc "Render the README's screenshot of worker 7's timeline (#{screenshot}) from a real run: bin/worker-seven's " \
       "processes, bin/lease_machines web, headless Chromium (test/integration/dashboard_test.rb)"
  task screenshot: :compile do
    sh({ "LEASE_MACHINES_SCREENSHOT" => screenshot }, FileUtils::RUBY, "-Ilib", "-Itest",
       "test/integration/dashboard_test.rb")
  end
end
