# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Which job classes declared a lease (kept off the job classes, which gain only holds_lease and lease).
    module Declarations
      TABLE = ObjectSpace::WeakMap.new
      # The conflict handler (retry_on's or discard_on's) each declaring class registered, by class.
      HANDLERS = ObjectSpace::WeakMap.new

      module_function

      def declare(job_class, declaration) = TABLE[job_class] = declaration

      def declared?(job_class) = job_class.ancestors.any? { |ancestor| TABLE.key?(ancestor) }

      def handle(job_class, handler) = HANDLERS[job_class] = handler

      # The conflict handler +job_class+ (or the ancestor that declared its lease) registered, or nil.
      def handler(job_class)
        owner = job_class.ancestors.find { |ancestor| HANDLERS.key?(ancestor) }
        owner && HANDLERS[owner]
      end
    end
  end
end
