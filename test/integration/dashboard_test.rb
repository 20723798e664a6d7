# frozen_string_literal: true

require "open3"
require "support/browser"

# The dashboard of the main job's database, as a user gets to it: bin/worker-seven's real worker processes write
# their night into a SQLite file, `bin/lease_machines web --database` serves it from a process of its own, and
# headless Chromium opens the report's timeline, where worker 7's refused write is marked. With
# LEASE_MACHINES_SCREENSHOT=PATH the screenshot is kept there: `bin/rake web:screenshot` renders the README's so.
class DashboardTest < Minitest::Test
  include LeaseMachines::TestSupport::Browser

  ROOT = File.expand_path("../..", __dir__)

  def setup
    plain_suite_only!("runs worker processes and a browser")
    checkout_only!("runs this checkout's bin/worker-seven and bin/lease_machines")
    requires_sqlite3!
  end

  def test_lease_machines_web_serves_worker_sevens_night_and_the_timeline_marks_the_refused_write
    database = File.join(scratch_dir("lease_machines-night"), "leases.sqlite3")
    output, status = Open3.capture2e(File.join(ROOT, "bin/worker-seven"), "--workers", "3", "--ttl", "0.5",
                                     "--duration", "3", "--database", database)
    assert status.success?, output
    assert_match(/^VERDICT: safe\./, output)

    serving(database) do |url|
      drive("#{url}resource?name=nightly-report&slot=0") do |driver, page|
        driver.navigate.to(page)
        svg = wait_for("the timeline never rendered") { driver.find_elements(css: ".timeline svg").first }
        assert_includes svg.attribute("outerHTML"), "token 1 refused", "worker 7's late write, marked"
        assert_includes driver.find_element(css: "table.events").text, "write_refused"
        png = ENV.fetch("LEASE_MACHINES_SCREENSHOT") { File.join(scratch_dir("lease_machines-shot"), "night.png") }
        save_png(driver, File.expand_path(png, ROOT))
        assert File.binread(File.expand_path(png, ROOT)).start_with?(PNG_SIGNATURE)
      end
    end
  end

  private

  # `bin/lease_machines web --database DATABASE` on a free port, in a process of its own; yields the URL it reports,
  # then stops it with TERM, which it answers by exiting 0.
  def serving(database)
    command = [File.join(ROOT, "bin/lease_machines"), "web", "--database", database, "--port", "0"]
    Open3.popen2e(*command) do |stdin, out, thread|
      stdin.close
      line = out.gets.to_s
      url = line[%r{ on (http://127\.0\.0\.1:\d+/) }, 1] or flunk "lease_machines web said: #{line}#{out.read}"
      begin
        yield url
      ensure
        Process.kill(:TERM, thread.pid)
        assert thread.value.success?, "lease_machines web exited #{thread.value.inspect}: #{out.read}"
      end
    end
  end
end
