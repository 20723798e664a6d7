# frozen_string_literal: true

# What the tests of bin/nightly-report (test/integration/nightly_report_test.rb, and solid_queue_test.rb on Solid
# Queue's processes) assert of its output.
module NightlyReportSupport
  COMMAND = File.expand_path("../../bin/nightly-report", __dir__)

  # Worker 7's story with three workers and one slot: held elsewhere, stalled, taken over, refused, lost.
  def assert_refused_story(output)
    assert_match(/worker 12\s+NightlyReportJob:Account\/1 is held elsewhere: retry later$/, output)
    assert_match(/worker 7\s+stalls before writing line 3 \(SIGSTOP\), still holding token 1$/, output)
    assert_match(/worker (12|19)\s+acquired NightlyReportJob:Account\/1: token 2$/, output)
    assert_match(/worker 7\s+REFUSED: token 1 is older than the fence's [23]; line 3 rolled back$/, output)
    assert_match(/worker 7\s+LeaseLost \(lost\): stops without writing more$/, output)
    assert_match(/^report lines in commit order, by token: 1x2 2x5 3x5$/, output)
  end
end
