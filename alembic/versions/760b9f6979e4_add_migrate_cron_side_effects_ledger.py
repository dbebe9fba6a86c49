"""add migrate-cron side_effects ledger

Revision ID: 760b9f6979e4
Revises: 69973539c494

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql

# revision identifiers, used by Alembic.
revision: str = '760b9f6979e4'
down_revision: Union[str, Sequence[str], None] = '69973539c494'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # Tables and indexes rendered from migrate_cron/store/schema.py.
    op.create_table('side_effects',
    sa.Column('key', sa.String(length=255).with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_nopad_bin', length=255), 'mariadb').with_variant(mysql.VARCHAR(charset='utf8mb4', collation='utf8mb4_bin', length=255), 'mysql'), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('holder', sa.String(length=255), nullable=True),
    sa.Column('job_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('attempts', sa.Integer(), server_default='1', nullable=False),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('attempted_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mssql.DATETIME2(precision=6), 'mssql').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.CheckConstraint("status IN ('attempted', 'done', 'failed')", name='side_effects_status_check'),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('side_effects')
