# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # The LeaseBusy a perform's own grant raised (its +job+), which the job class's holds_lease handles first, before
    # any handler of the class's own (a retry_on StandardError declared after it, a subclass's rescue_from). One that
    # comes out of the job's body (a job it performed inline was busy) is raised on as a plain LeaseBusy: the
    # declaration never re-runs a job whose body ran.
    class Conflict < LeaseBusy
      attr_reader :job

      def initialize(job:, resource:, attempts:)
        @job = job
        super(resource: resource, attempts: attempts)
      end
    end
  end
end
