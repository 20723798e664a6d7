# frozen_string_literal: true

module LeaseMachines
  module ActiveJob
    # The one class macro a job class gains.
    module ClassMethods
      # Declares that each perform holds a lease on the resource +key+ names (a proc of the job's arguments), taken in
      # around_perform and renewed while the job runs. See Declaration for the options, and for the group a subclass
      # takes its leases in.
      def holds_lease(**options)
        if Declarations.declared?(self)
          raise ArgumentError, "holds_lease: #{name || inspect} already holds a lease (declared once per job class)"
        end

        declaration = Declaration.new(self, **options)
        Declarations.declare(self, declaration)
        around_perform { |job, block| Execution.perform(job, declaration.for_job_class(job.class), &block) }
        declaration
      end
    end

    # Which job classes declared a lease (kept off the job classes, which gain only holds_lease and lease).
    module Declarations
      TABLE = ObjectSpace::WeakMap.new

      module_function

      def declare(job_class, declaration) = TABLE[job_class] = declaration

      def declared?(job_class) = job_class.ancestors.any? { |ancestor| TABLE.key?(ancestor) }
    end
  end
end
