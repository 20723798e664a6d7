# frozen_string_literal: true

require "minitest/autorun"
require "lease_machines"

module LeaseMachines
  # Shared helpers and the suite's two extra modes:
  #
  # - LEASE_MACHINES_GC_STRESS=1 runs every test body with GC.stress on, so an object the extension forgot to keep
  #   alive is collected at the worst moment.
  # - LEASE_MACHINES_RBS_TEST=1 is set when the suite runs under RBS's runtime type checks (rake test:rbs); tests
  #   that deliberately pass ill-typed arguments skip themselves there, since RBS refuses them before the call.
  module TestSupport
    GC_STRESS = ENV["LEASE_MACHINES_GC_STRESS"] == "1"
    RBS_TEST = ENV["LEASE_MACHINES_RBS_TEST"] == "1"

    def before_setup
      super
      GC.stress = true if GC_STRESS
    end

    def after_teardown
      GC.stress = false if GC_STRESS
      super
    end

    # Skip a test that passes arguments outside the signatures on purpose.
    def ill_typed!
      skip "passes ill-typed arguments on purpose; RBS's runtime checks refuse them first" if RBS_TEST
    end

    # Fewer iterations when every allocation runs the GC.
    def iterations(normal)
      GC_STRESS ? [normal / 50, 10].max : normal
    end

    def granted(decision)
      assert_equal :granted, decision.status, "expected a grant, got #{decision.inspect}"
      decision.lease
    end
  end
end

Minitest::Test.include(LeaseMachines::TestSupport)
