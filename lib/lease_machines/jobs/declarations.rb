# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Which job classes declared a lease (kept off the job classes, which gain only holds_lease and lease).
    module Declarations
      TABLE = ObjectSpace::WeakMap.new

      module_function

      def declare(job_class, declaration) = TABLE[job_class] = declaration

      def declared?(job_class) = job_class.ancestors.any? { |ancestor| TABLE.key?(ancestor) }
    end
  end
end
