# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Restarts the renewer in a forked child (Process._fork runs for fork, Process.fork and Kernel#fork alike): the
    # child has neither the parent's renewer thread nor its jobs, and must not share its store connections.
    module ForkHook
      def _fork
        pid = super
        LeaseMachines::Jobs.after_fork if pid.zero?
        pid
      end
    end
  end
end

Process.singleton_class.prepend(LeaseMachines::Jobs::ForkHook)
