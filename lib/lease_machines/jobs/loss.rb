# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # What Lost and Refused share: the exception of a job's own lease (its +job+), which the job class's holds_lease
    # handles first (+on_lost:+), before any handler of the class's own. One that comes out of another job performed
    # inline in this one is raised on as the plain exception (#plain): the declaration re-runs a job for its own lost
    # lease only.
    module Loss
      attr_reader :job

      def initialize(job:, **details)
        @job = job
        @details = details
        super(**details)
      end

      # The same exception (the class's superclass: LeaseLost, Fenced), of no job.
      def plain = self.class.superclass.new(**@details)
    end
  end
end
