# frozen_string_literal: true

module LeaseMachines
  module Jobs
    # Which job classes declared a lease (kept off the job classes, which gain only holds_lease and lease).
    module Declarations
      TABLE = ObjectSpace::WeakMap.new
      # The handlers (retry_on's or discard_on's) each declaring class registered, by kind (:conflict for on_conflict:,
      # :lost for on_lost:), then by class. Each handler is the class's (in its rescue_handlers), which keeps it.
      HANDLERS = { conflict: ObjectSpace::WeakMap.new, lost: ObjectSpace::WeakMap.new }.freeze

      module_function

      def declare(job_class, declaration) = TABLE[job_class] = declaration

      def declared?(job_class) = job_class.ancestors.any? { |ancestor| TABLE.key?(ancestor) }

      # The declaration +job_class+ (or the ancestor that declared its lease) made, or nil.
      def declaration(job_class)
        owner = job_class.ancestors.find { |ancestor| TABLE.key?(ancestor) }
        owner && TABLE[owner]
      end

      # Declares on +job_class+ what +action+ says for +errors+ (retry_on, again after +wait+ seconds for +attempts+
      # retries; discard_on; nothing for :raise), and registers the handler as the declaration's for +kind+
      # (:conflict, :lost), which HoldsLease#rescue_with_handler runs first for the perform's own errors.
      def handle(job_class, kind, action, errors, wait, attempts)
        case action
        when :retry
          # A proc: retry_on truncates a number of seconds to whole ones, and this wait is exact.
          job_class.retry_on(*errors, wait: ->(_executions) { wait }, attempts: attempts + 1)
        when :discard then job_class.discard_on(*errors)
        else return
        end
        HANDLERS.fetch(kind)[job_class] = job_class.rescue_handlers.last.last
      end

      # The handler of +kind+ (:conflict, :lost) +job_class+ (or the ancestor that declared its lease) registered, or
      # nil.
      def handler(job_class, kind)
        handlers = HANDLERS.fetch(kind)
        owner = job_class.ancestors.find { |ancestor| handlers.key?(ancestor) }
        owner && handlers[owner]
      end
    end
  end
end
